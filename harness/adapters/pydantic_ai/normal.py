"""A session's DBOS workflows in killpoint's normal form (killpoint.values.normal_form), and
the invariants the system database must keep.

A run is one workflow. Its status is the workflow's (PENDING is a run in flight: RUNNING;
SUCCESS: COMPLETED). Its messages come from what DBOS holds durably:

- a workflow that succeeded: its output, the run's new messages as pydantic-ai returned
  them (the user prompt, each model response, each tool return);
- any other: rebuilt from its recorded steps, in the order DBOS numbered them: the user
  prompt from the workflow's inputs, each model step's ModelResponse, and in mode `steps`
  each tool step's record (its call id, name and result). In `model-steps` no tool result
  is recorded anywhere until the run ends: the messages are the prompt and the model's
  responses, which is all a recovery gets back.

Every message is a durable record, so `last_checkpoint_at_message_index` is their number.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from pydantic_ai.messages import (
    ModelMessage,
    ModelMessagesTypeAdapter,
    ModelResponse,
    RetryPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)

from killpoint.adapters.pydantic_ai.agent import STATUS, TOOL_STEP_PREFIX
from killpoint.adapters.pydantic_ai.reading import Reader, Workflow
from killpoint.scenarios.conversation import canonical_arguments

MODEL_STEP_SUFFIX = "__model.request"


def arguments(args: Any) -> str:
    """A call's arguments as canonical JSON text (pydantic-ai keeps the model's text, or a
    dict once it parsed them)."""
    if isinstance(args, str):
        try:
            return canonical_arguments(args or "{}")
        except ValueError:
            return args
    return canonical_arguments(args or {})


def _usage(response: ModelResponse) -> dict[str, int]:
    u = response.usage
    return {"input_tokens": int(u.input_tokens), "output_tokens": int(u.output_tokens)}


def from_messages(messages: Iterable[ModelMessage]) -> list[dict[str, Any]]:
    """pydantic-ai's messages as normal-form messages, one per prompt, response and tool
    return."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if isinstance(m, ModelResponse):
            out.append(_response(m))
            continue
        for part in m.parts:
            if isinstance(part, UserPromptPart):
                content = part.content if isinstance(part.content, str) else str(part.content)
                out.append({"role": "user", "content": content, "tool_calls": []})
            elif isinstance(part, ToolReturnPart):
                text = part.model_response_str()
                out.append(_tool_message(part.tool_name, part.tool_call_id, text))
            elif isinstance(part, RetryPromptPart) and part.tool_name is not None:
                text = part.model_response()
                out.append(_tool_message(part.tool_name, part.tool_call_id, text))
    return out


def _response(m: ModelResponse) -> dict[str, Any]:
    text = "".join(p.content for p in m.parts if isinstance(p, TextPart))
    calls = [p for p in m.parts if isinstance(p, ToolCallPart)]
    return {
        "role": "assistant",
        "content": text or None,
        "tool_calls": [
            {"name": c.tool_name, "arguments": arguments(c.args), "tool_call_id": c.tool_call_id}
            for c in calls
        ],
        "usage": _usage(m),
    }


def _tool_message(name: str | None, call_id: str, content: str) -> dict[str, Any]:
    return {
        "role": "tool",
        "name": name,
        "content": content,
        "tool_calls": [],
        "tool_call_id": call_id,
    }


def from_steps(workflow: Workflow) -> list[dict[str, Any]]:
    """A workflow's messages rebuilt from its inputs and recorded steps."""
    out: list[dict[str, Any]] = []
    args: Sequence[Any] = (workflow.inputs or {}).get("args") or ()
    if len(args) >= 2:
        out.append({"role": "user", "content": str(args[1]), "tool_calls": []})
    for step in workflow.steps:
        if step.error is not None:
            continue
        if step.name.endswith(MODEL_STEP_SUFFIX) and isinstance(step.output, ModelResponse):
            out.append(_response(step.output))
        elif step.name.startswith(TOOL_STEP_PREFIX) and isinstance(step.output, dict):
            record = step.output
            part = ToolReturnPart(
                tool_name=str(record["name"]),
                content=record["result"],
                tool_call_id=str(record["call_id"]),
            )
            out.append(_tool_message(part.tool_name, part.tool_call_id, part.model_response_str()))
    return out


def executions(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """One per tool result, placed by the call it answers: (model turn of the run, index in
    that turn's batch)."""
    where: dict[str, tuple[int, int, dict[str, Any]]] = {}
    turn = 0
    out: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == "assistant":
            turn += 1
            for i, c in enumerate(m["tool_calls"]):
                where[c["tool_call_id"]] = (turn, i, c)
        elif m["role"] == "tool" and m["tool_call_id"] in where:
            t, i, c = where[m["tool_call_id"]]
            out.append(
                {
                    "name": c["name"],
                    "arguments": c["arguments"],
                    "turn": t,
                    "call_index": i,
                    "result": m["content"],
                }
            )
    return out


def _error_text(error: Any) -> str | None:
    if error is None:
        return None
    if isinstance(error, BaseException):
        return f"{type(error).__name__}: {error}"
    return str(error)


def run(workflow: Workflow) -> dict[str, Any]:
    status = STATUS.get(workflow.status, workflow.status)
    output = workflow.output if isinstance(workflow.output, dict) else None
    if status == "COMPLETED" and output is not None:
        messages = from_messages(ModelMessagesTypeAdapter.validate_json(output["messages"]))
    else:
        messages = from_steps(workflow)
    responses = [m for m in messages if m["role"] == "assistant"]
    return {
        "input": next((m["content"] for m in messages if m["role"] == "user"), None),
        "status": status,
        "content": str(output["output"]) if output is not None else None,
        "error": _error_text(workflow.error),
        "usage": {
            "input_tokens": sum(m["usage"]["input_tokens"] for m in responses),
            "output_tokens": sum(m["usage"]["output_tokens"] for m in responses),
            "model_calls": len(responses),
        },
        "last_checkpoint_at_message_index": len(messages),
        "messages": messages,
        "tool_executions": executions(messages),
    }


def session(reader: Reader, session_id: str) -> dict[str, Any] | None:
    """The session in the normal form; None when it has no workflow."""
    workflows = reader.workflows(session_id)
    if not workflows:
        return None
    # pydantic-ai keeps no session state of its own (a run's deps are not persisted).
    return {"state": None, "runs": {w.workflow_id: run(w) for w in workflows}}


def invariants(reader: Reader, session_id: str) -> list[str]:
    """What must hold of a session's workflows at any moment, crash or not."""
    problems: list[str] = []
    integrity = reader.integrity()
    if integrity:
        problems.append(f"SQLite integrity_check: {integrity}")
    for workflow in reader.workflows(session_id):
        wid = workflow.workflow_id
        if workflow.inputs is None:
            problems.append(f"workflow {wid} has a status row but no recorded inputs")
        if workflow.status == "SUCCESS" and not isinstance(workflow.output, dict):
            problems.append(f"workflow {wid} is SUCCESS without its output")
        ids = [s.function_id for s in workflow.steps]
        if len(set(ids)) != len(ids):
            problems.append(f"workflow {wid} records step ids twice: {ids}")
        asked: set[str] = set()
        for m in from_steps(workflow):
            asked.update(c["tool_call_id"] for c in m["tool_calls"])
            if m["role"] == "tool" and m["tool_call_id"] not in asked:
                problems.append(
                    f"workflow {wid}: a tool step answers call {m['tool_call_id']} that no "
                    "earlier model step asked for"
                )
    return problems
