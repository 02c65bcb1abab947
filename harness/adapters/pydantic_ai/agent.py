"""A pydantic-ai agent built from a killpoint scenario, made durable by DBOS, and the Driver
over it.

The agent is what a pydantic-ai user writes for durable execution with DBOS: an `Agent`
with pydantic-ai's OpenAI Responses model (over the openai SDK, which the scenario's
scripted model answers at the HTTP layer), the scenario's tools, and the `DBOSDurability`
capability (pydantic-ai 2.x's successor of the deprecated `DBOSAgent` wrapper: the same
model-request steps inside a workflow of the user's own). A run is one DBOS workflow,
`killpoint.run`, whose workflow id is the harness's run id, and which carries the
session id as a workflow attribute (`killpoint_session`).

- modes `steps` and `steps-sequential`: each tool call is a DBOS step of its own
  (`DBOS.step`, as the pydantic-ai and DBOS guides tell users to decorate tools that do
  I/O), beside the model requests; a batch's calls run concurrently, or one at a time;
- mode `model-steps`: pydantic-ai's default under DBOS: the model requests are steps, the
  tools run in workflow code, so a recovery runs every earlier tool call again.

DBOS is configured once per process on the cell's store (its SQLite system database) and
launched on the first start or resume: a launch recovers the PENDING workflows of its
executor, which is what a user's restarted process does after a crash.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import openai
from dbos import DBOS, SetWorkflowAttributes, SetWorkflowID
from pydantic_ai import Agent, RunContext, Tool
from pydantic_ai.durable_exec.dbos import DBOSDurability
from pydantic_ai.messages import ModelMessagesTypeAdapter
from pydantic_ai.models.openai import OpenAIResponsesModel
from pydantic_ai.providers.openai import OpenAIProvider

from killpoint.adapters.pydantic_ai.system_db import (
    SESSION_ATTRIBUTE,
    system_database_url,
    system_schema,
)
from killpoint.adapters.pydantic_ai.writes import create_counter
from killpoint.redaction import redact
from killpoint.scenarios import Ledger, RunResult, Scenario, ToolEnv
from killpoint.scenarios.tooling import IDEMPOTENCY_KEY, INJECTED

SCRIPTED_API_KEY = "sk-killpoint-scripted-model"
MODEL_ID = "gpt-4.1-mini"
APP_NAME = "killpoint"
AGENT_NAME = "killpoint"
WORKFLOW = "killpoint.run"
TOOL_STEP_PREFIX = "killpoint.tool."
# How often a driver polls for the result of a workflow that another thread runs (a
# recovered one): DBOS's default is a second, which would add up to a second to every
# resumed cell. Everything else is DBOS's default configuration.
POLL_SECONDS = 0.1
STATUS = {
    "PENDING": "RUNNING",
    "ENQUEUED": "PENDING",
    "DELAYED": "PENDING",
    "SUCCESS": "COMPLETED",
    "ERROR": "ERROR",
    "CANCELLED": "CANCELLED",
    "MAX_RECOVERY_ATTEMPTS_EXCEEDED": "ERROR",
}


def tool_schema(fn: Callable[..., Any]) -> dict[str, Any]:
    """The JSON schema pydantic-ai builds from a tool's signature, without the parameters
    the runtime fills in itself (the model never sends an idempotency key)."""
    signature = inspect.signature(fn)
    visible = [p for p in signature.parameters.values() if p.name not in INJECTED]

    def shape(**kwargs: Any) -> Any: ...

    shape.__name__, shape.__doc__ = fn.__name__, fn.__doc__
    shape.__signature__ = signature.replace(parameters=visible)  # type: ignore[attr-defined]
    shape.__annotations__ = {
        k: v for k, v in getattr(fn, "__annotations__", {}).items() if k not in INJECTED
    }
    return dict(Tool(shape).tool_def.parameters_json_schema)


async def _call(fn: Callable[..., Any], arguments: dict[str, Any]) -> Any:
    """A scenario tool's result; its error is its result too (as the model reads it). A
    sync tool runs in a thread: its gates block, and the batch's other calls go on."""
    try:
        if inspect.iscoroutinefunction(fn):
            return await fn(**arguments)
        return await asyncio.to_thread(fn, **arguments)
    except Exception as exc:
        return f"error: {type(exc).__name__}: {exc}"


def build_tools(scenario: Scenario, ledger: Ledger, *, steps: bool) -> list[Tool[None]]:
    """The scenario's tools as pydantic-ai tools; with `steps`, each call is a DBOS step
    whose output is the call's record (its call id, name and result)."""
    tools: list[Tool[None]] = []
    for fn in scenario.build_tools(ToolEnv(ledger)):
        name = fn.__name__
        keyed = IDEMPOTENCY_KEY in inspect.signature(fn).parameters
        tools.append(
            Tool.from_schema(
                _step_tool(fn, name, keyed) if steps else _inline_tool(fn, keyed),
                name=name,
                description=fn.__doc__,
                json_schema=tool_schema(fn),
                takes_ctx=True,
            )
        )
    return tools


def _step_tool(fn: Callable[..., Any], name: str, keyed: bool) -> Callable[..., Any]:
    async def step(call_id: str, arguments: dict[str, Any]) -> dict[str, Any]:
        if keyed:
            # The step's own place in the workflow: a recovery that runs the step again
            # (its output was not recorded) runs it under the same key.
            arguments = {**arguments, IDEMPOTENCY_KEY: f"{DBOS.workflow_id}/{DBOS.step_id}"}
        return {"call_id": call_id, "name": name, "result": await _call(fn, arguments)}

    step.__name__ = name
    durable = DBOS.step(name=f"{TOOL_STEP_PREFIX}{name}")(step)

    async def tool(ctx: RunContext[None], **arguments: Any) -> Any:
        record = await durable(ctx.tool_call_id or "", arguments)
        return record["result"]

    return tool


def _inline_tool(fn: Callable[..., Any], keyed: bool) -> Callable[..., Any]:
    async def tool(ctx: RunContext[None], **arguments: Any) -> Any:
        if keyed:
            # No step id here: the model's call id, from the recorded model step.
            arguments = {**arguments, IDEMPOTENCY_KEY: f"{DBOS.workflow_id}/{ctx.tool_call_id}"}
        return await _call(fn, arguments)

    return tool


def build_agent(
    scenario: Scenario,
    tools: Sequence[Tool[None]],
    client: openai.AsyncOpenAI,
    *,
    execution: str = "parallel_ordered_events",
) -> Agent[None, str]:
    model = OpenAIResponsesModel(MODEL_ID, provider=OpenAIProvider(openai_client=client))
    return Agent(
        model,
        name=AGENT_NAME,
        tools=list(tools),
        instructions=scenario.instructions,
        capabilities=[DBOSDurability(parallel_execution_mode=execution)],  # type: ignore[arg-type]
    )


# -- the workflow -------------------------------------------------------------------------

# The agent the workflow runs in this process: DBOS registers workflows by name before it
# launches, and a recovery calls the registered function with the recorded inputs, so the
# one workflow is a module's function and the driver built in this process lends it the
# agent.
_agent: Agent[None, str] | None = None


@DBOS.workflow(name=WORKFLOW)
async def run_workflow(session_id: str, prompt: str, history: str | None) -> dict[str, Any]:
    """One run of the agent: the prompt after the session's earlier messages (pydantic-ai's
    JSON, as recorded in the workflow's inputs). The output keeps the run's new messages."""
    if _agent is None:
        raise RuntimeError("killpoint: no pydantic-ai agent in this process (build a driver)")
    messages = ModelMessagesTypeAdapter.validate_json(history) if history else None
    result = await _agent.run(prompt, message_history=messages)
    return {"output": result.output, "messages": result.new_messages_json().decode()}


# -- the driver ---------------------------------------------------------------------------

_launched: str | None = None  # the system database DBOS was launched on in this process
_launch_lock = threading.Lock()


def launch(system_url: str) -> None:
    """Configure and launch DBOS once in this process (a launch recovers the PENDING
    workflows of this executor, in a thread of DBOS's)."""
    global _launched
    with _launch_lock:
        if _launched == system_url:
            return
        if _launched is not None:
            DBOS.destroy()
        schema = system_schema(system_url)
        # killpoint's counter table, made before DBOS writes anything (writes.py); DBOS
        # creates the file (or the schema's tables) and its tables at launch.
        create_counter(system_url)
        DBOS(
            config={
                "name": APP_NAME,
                "system_database_url": system_url,
                **({"dbos_system_schema": schema} if schema else {}),
                "log_level": "ERROR",
            }
        )
        DBOS.launch()
        _launched = system_url


def shutdown() -> None:
    """Destroy this process's DBOS (tests and warm-up; a worker just exits)."""
    global _launched
    with _launch_lock:
        if _launched is not None:
            DBOS.destroy()
            _launched = None


class PydanticAIDriver:
    """Runs a scenario's inputs as DBOS workflows of one pydantic-ai agent
    (scenarios.Driver).

    start: a new workflow under the run's id, the session's earlier messages as its input;
    resume: launch DBOS in this process (which recovers the workflow if it was PENDING),
    then wait for the workflow's result;
    cancel: `DBOS.cancel_workflow`, a durable status write (CANCELLED) that ends the run
    at its next step.
    """

    def __init__(
        self,
        scenario: Scenario,
        store_url: str,
        mode: str,
        ledger: Ledger,
        *,
        steps: bool,
        execution: str = "parallel_ordered_events",
    ) -> None:
        global _agent
        self.scenario = scenario
        self.mode = mode
        self.system_url = system_database_url(store_url)
        self.client = openai.AsyncOpenAI(api_key=SCRIPTED_API_KEY, max_retries=scenario.max_retries)
        tools = build_tools(scenario, ledger, steps=steps)
        self.agent = build_agent(scenario, tools, self.client, execution=execution)
        _agent = self.agent

    async def start(self, input: str, *, session_id: str, run_id: str) -> RunResult:
        launch(self.system_url)
        history = await self._history(session_id, run_id)
        with SetWorkflowID(run_id), SetWorkflowAttributes({SESSION_ATTRIBUTE: session_id}):
            handle = await DBOS.start_workflow_async(run_workflow, session_id, input, history)
        return await self._result(run_id, handle)

    async def resume(
        self, run_id: str, *, session_id: str, confirmations: Mapping[str, bool]
    ) -> RunResult:
        launch(self.system_url)
        status = await DBOS.get_workflow_status_async(run_id)
        if status is None:
            # The URL as shown, never with its password (it reaches the cell's findings).
            shown = redact(self.system_url)
            raise LookupError(f"killpoint: DBOS has no workflow {run_id!r} in {shown}")
        # A workflow that ended in ERROR stays so: DBOS's resume_workflow leaves SUCCESS and
        # ERROR rows as they are (adapter.unsupported declines the scenarios that continue
        # one), so the handle returns the recorded outcome.
        handle: Any = await DBOS.retrieve_workflow_async(run_id)
        return await self._result(run_id, handle)

    def cancel(self, run_id: str) -> None:
        # Called from inside the running event loop (the scripted model's hook), where
        # DBOS's sync API refuses to run: the cancel goes to a thread of its own, joined
        # before the model answers, so the cancel is durable when the turn is served.
        done = threading.Thread(target=DBOS.cancel_workflow, args=(run_id,), daemon=True)
        done.start()
        done.join()

    async def _history(self, session_id: str, run_id: str) -> str | None:
        """The messages of the session's earlier runs (each run's recorded output)."""
        earlier = await asyncio.to_thread(_earlier_runs, self.system_url, session_id, run_id)
        messages: list[Any] = []
        for wid in earlier:
            handle: Any = await DBOS.retrieve_workflow_async(wid)
            out = await handle.get_result()
            messages.extend(json.loads(out["messages"]))
        return json.dumps(messages) if messages else None

    async def _result(self, run_id: str, handle: Any) -> RunResult:
        from dbos._error import DBOSAwaitedWorkflowCancelledError

        try:
            out = await handle.get_result(polling_interval_sec=POLL_SECONDS)
        except DBOSAwaitedWorkflowCancelledError:
            return RunResult(run_id=run_id, status="CANCELLED")
        except Exception as exc:
            # An ERROR is an answer only when DBOS recorded it; anything else (a store
            # that failed) propagates.
            status = await DBOS.get_workflow_status_async(run_id)
            if status is None or status.status != "ERROR":
                raise
            return RunResult(run_id=run_id, status="ERROR", content=f"{type(exc).__name__}: {exc}")
        return RunResult(run_id=run_id, status="COMPLETED", content=str(out["output"]))

    async def aclose(self) -> None:
        await self.client.close()


def _earlier_runs(system_url: str, session_id: str, run_id: str) -> list[str]:
    """Workflow ids of the session's runs that completed before `run_id`, oldest first."""
    from killpoint.adapters.pydantic_ai.reading import reader

    with reader(system_url) as r:
        return r.completed_before(session_id, run_id)
