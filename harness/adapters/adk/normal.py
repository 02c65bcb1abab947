"""An ADK session's events in the normal form, and the invariants its history must keep.

ADK keeps a session as an append-only list of events, each stamped with its invocation.
One killpoint run is one invocation (its id is the run's), so a run is the invocation's
events read in order:

- the user's message, each model reply (its text and function calls) and each event of
  function responses are the run's `messages`; each function response is a tool
  execution, placed at the model turn and the position of the call it answers;
- an event with an `error_code` is not part of the conversation: ADK stores a model
  error it met (the provider's 500, a timeout) and the seal of an aborted invocation
  (`INVOCATION_ABORTED`, with synthetic responses to the calls left unanswered) as such
  events. They are the run's `failures` (killpoint.values.normal_form says how they are
  compared), and they decide its status while they are its latest word;
- `end_of_agent`, which ADK writes after the final answer, closes the agent's part of
  the invocation: the run is COMPLETED from its final answer on (what a resume would find
  is the answer), and the marker itself is left out of the comparison.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from killpoint.values.sentences import count

# ADK's mark of the events that seal an aborted invocation (google.adk.events._abort_events).
ABORTED = "INVOCATION_ABORTED"
# The ids the model and ADK make up: the oracle leaves them out.
EXCLUDED = ("call_id",)


def _parts(event: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return list((event.get("content") or {}).get("parts") or [])


def _text(parts: Iterable[Mapping[str, Any]]) -> str | None:
    texts = [p["text"] for p in parts if isinstance(p.get("text"), str) and not p.get("thought")]
    return "".join(texts) if texts else None


def _arguments(args: Any) -> str:
    """A call's arguments as JSON text (ADK keeps them parsed)."""
    return json.dumps(args if args is not None else {})


def _usage(event: Mapping[str, Any]) -> dict[str, int]:
    usage = event.get("usage_metadata") or {}
    return {
        "input_tokens": int(usage.get("prompt_token_count") or 0),
        "output_tokens": int(usage.get("candidates_token_count") or 0),
    }


def _failure(event: Mapping[str, Any], at: int) -> dict[str, Any]:
    code = str(event.get("error_code"))
    sealed = [
        (p.get("function_response") or {}).get("name")
        for p in _parts(event)
        if p.get("function_response")
    ]
    return {
        "kind": "abort" if code == ABORTED else "error",
        "code": code,
        "message": event.get("error_message"),
        "at_message": at,
        **({"sealed_calls": sealed} if sealed else {}),
    }


def run_of(events: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One invocation's events (in order, as ADK stores them) as a normal-form run."""
    messages: list[dict[str, Any]] = []
    executions: list[dict[str, Any]] = []
    failures: list[dict[str, Any]] = []
    calls: dict[str, tuple[int, int, str, str]] = {}  # call id -> (turn, index, name, args)
    status, content, turn = "RUNNING", None, 0
    usage: Counter[str] = Counter()
    for event in events:
        parts = _parts(event)
        if event.get("error_code"):
            failure = _failure(event, len(messages))
            failures.append(failure)
            status = "CANCELLED" if failure["kind"] == "abort" else "ERROR"
            continue
        if not parts:
            continue  # end_of_agent, a state delta without content: no message
        role = (event.get("content") or {}).get("role")
        if event.get("author") == "user":
            messages.append({"role": "user", "content": _text(parts), "tool_calls": []})
            continue
        requested = [p["function_call"] for p in parts if p.get("function_call")]
        answered = [p["function_response"] for p in parts if p.get("function_response")]
        if role == "model":
            turn += 1
            usage["model_calls"] += 1
            usage.update(_usage(event))
            text = _text(parts)
            for index, call in enumerate(requested):
                calls[str(call.get("id"))] = (
                    turn,
                    index,
                    str(call.get("name")),
                    _arguments(call.get("args")),
                )
            messages.append(
                {
                    "role": "assistant",
                    "content": text,
                    "tool_calls": [
                        {"name": str(c.get("name")), "arguments": _arguments(c.get("args"))}
                        for c in requested
                    ],
                    "call_id": [c.get("id") for c in requested],
                    "usage": _usage(event),
                }
            )
            if requested:
                status = "RUNNING"
            else:
                status, content = "COMPLETED", text
            continue
        delta = (event.get("actions") or {}).get("state_delta") or {}
        for response in answered:
            call_id = str(response.get("id"))
            place = calls.get(call_id)
            result = response.get("response")
            messages.append(
                {
                    "role": "tool",
                    "name": response.get("name"),
                    "content": result,
                    "tool_calls": [],
                    "call_id": call_id,
                    **({"state_delta": delta} if delta else {}),
                }
            )
            executions.append(
                {
                    "name": str(response.get("name")),
                    "arguments": place[3] if place else "{}",
                    # A response to a call this invocation never made (the history of
                    # another process) is placed at turn 0.
                    "turn": place[0] if place else 0,
                    "call_index": place[1] if place else len(executions),
                    "result": result,
                    "status": "error"
                    if isinstance(result, Mapping) and "error" in result
                    else "ok",
                }
            )
        if answered:
            status = "RUNNING"
    return {
        "status": status,
        "content": content,
        "messages": messages,
        "tool_executions": executions,
        # Every event is a durable write of its own: the store holds all of them.
        "last_checkpoint_at_message_index": len(messages),
        "failures": failures,
        "usage": dict(usage),
    }


def session_of(state: Any, rows: Sequence[tuple[str, Mapping[str, Any]]]) -> dict[str, Any]:
    """The normal form of a session: its state, and its invocations as runs in the order
    each began. `rows`: (invocation id, event) in the store's order."""
    grouped: dict[str, list[Mapping[str, Any]]] = {}
    for invocation, event in rows:
        grouped.setdefault(invocation, []).append(event)
    return {"state": state, "runs": {inv: run_of(events) for inv, events in grouped.items()}}


def invariants(rows: Sequence[tuple[str, Mapping[str, Any]]]) -> list[str]:
    """What ADK's own history must keep, crash or not: each function call id asked once and
    answered at most once; every call answered before the model is asked again (a batch's
    responses are one event, written after its last call returned)."""
    problems: list[str] = []
    asked: Counter[str] = Counter()
    answered: Counter[str] = Counter()
    pending: dict[str, list[str]] = {}  # invocation -> call ids not answered yet
    for invocation, event in rows:
        open_ = pending.setdefault(invocation, [])
        for p in _parts(event):
            call, response = p.get("function_call"), p.get("function_response")
            if call:
                asked[str(call.get("id"))] += 1
            if response:
                answered[str(response.get("id"))] += 1
                if str(response.get("id")) in open_:
                    open_.remove(str(response.get("id")))
        role = (event.get("content") or {}).get("role")
        if role == "model" and not event.get("error_code"):
            if open_:
                problems.append(
                    f"invocation {invocation}: the model was asked again while calls "
                    f"{open_} had no response"
                )
            open_[:] = [
                str(c["function_call"].get("id")) for c in _parts(event) if c.get("function_call")
            ]
    for call_id, n in sorted(asked.items()):
        if n > 1:
            problems.append(f"function call {call_id} appears in {count(n, 'event')}")
    for call_id, n in sorted(answered.items()):
        if n > 1:
            problems.append(f"function call {call_id} has {count(n, 'response')}")
    return problems


__all__ = ["ABORTED", "EXCLUDED", "invariants", "run_of", "session_of"]
