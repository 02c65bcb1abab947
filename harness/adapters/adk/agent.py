"""The ADK agent built from a scenario, and the Driver that starts, resumes and cancels its
invocations in a worker.

What an ADK user writes for a durable agent, unmodified: an `LlmAgent` with the scenario's
tools as plain functions, ADK's own `LiteLlm` model class speaking Chat Completions to the
scripted model's local address, an `App` with `ResumabilityConfig(is_resumable=True)`, and
`DatabaseSessionService` on the store. A killpoint run is one ADK invocation under the
run's id: `run_async(invocation_id=run_id, new_message=...)` starts it, and
`run_async(invocation_id=run_id)` continues it (after a crash, or after a model error).
"""

from __future__ import annotations

import asyncio
import inspect
import threading
import warnings
from collections.abc import Callable, Mapping
from typing import Any

from sqlalchemy.engine import make_url

from killpoint.adapters.adk.normal import run_of
from killpoint.errors import StoreNotSupported
from killpoint.scenarios import Ledger, RunResult, Scenario, ToolEnv
from killpoint.scenarios.model_server import SCRIPTED_API_KEY, model_url
from killpoint.scenarios.tooling import IDEMPOTENCY_KEY, SESSION_STATE

# ADK marks resumability experimental and says so on every App; the cells' logs need it once.
warnings.filterwarnings("ignore", message=r"\[EXPERIMENTAL\]", category=UserWarning)

APP = "killpoint"
USER = "killpoint"
AGENT = "agent"
MODEL = "openai/gpt-4.1-mini"
# Seconds LiteLLM waits for a reply: the scripted model answers at once, so this only
# decides how long a `model-timeout` cell waits for the request it holds unanswered.
MODEL_TIMEOUT = 10.0
# Seconds a cancel waits for the invocation to come to rest (see AdkDriver.cancel).
CANCEL_WAIT = 30.0


def async_url(store_url: str) -> str:
    """The store URL with the asyncio driver DatabaseSessionService needs: aiosqlite for a
    SQLite file (the URL's query, such as the lock timeout, kept), psycopg 3 (which has an
    asyncio mode) for PostgreSQL."""
    url = make_url(store_url)
    backend = url.get_backend_name()
    if backend == "sqlite":
        return url.set(drivername="sqlite+aiosqlite").render_as_string(hide_password=False)
    if backend == "postgresql":
        return url.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    raise StoreNotSupported(
        f"killpoint: the adk runtime stores on SQLite or PostgreSQL, not {backend!r}: run "
        "killpoint with --store sqlite or --store postgresql+psycopg://..."
    )


def adk_tool(fn: Callable[..., Any]) -> Callable[..., Any]:
    """A scenario tool as an ADK user writes one: the parameters the model fills, plus
    ADK's `tool_context` where the tool needs what the runtime holds. Its idempotency key
    is the invocation and the model's call id; its session state is ADK's session state,
    each key the tool changed written back through `tool_context.state` (ADK records
    the change as the event's state delta, applied with the function response)."""
    from google.adk.tools.tool_context import ToolContext

    signature = inspect.signature(fn)
    injected = {IDEMPOTENCY_KEY, SESSION_STATE, "run_id"} & set(signature.parameters)
    if not injected:
        return fn

    def call(**kwargs: Any) -> Any:
        context: Any = kwargs.pop("tool_context")
        if IDEMPOTENCY_KEY in injected:
            kwargs[IDEMPOTENCY_KEY] = f"{context.invocation_id}/{context.function_call_id}"
        if "run_id" in injected:
            kwargs["run_id"] = context.invocation_id
        if SESSION_STATE not in injected:
            return fn(**kwargs)
        state = context.state.to_dict()
        before = {k: _copy(v) for k, v in state.items()}
        kwargs[SESSION_STATE] = state
        try:
            return fn(**kwargs)
        finally:
            for key, value in state.items():
                if key not in before or before[key] != value:
                    context.state[key] = value

    params = [p for name, p in signature.parameters.items() if name not in injected]
    params.append(
        inspect.Parameter("tool_context", inspect.Parameter.KEYWORD_ONLY, annotation=ToolContext)
    )
    call.__signature__ = signature.replace(parameters=params)  # type: ignore[attr-defined]
    annotations = {k: v for k, v in getattr(fn, "__annotations__", {}).items() if k not in injected}
    call.__annotations__ = {**annotations, "tool_context": ToolContext}
    call.__name__, call.__qualname__, call.__doc__ = fn.__name__, fn.__name__, fn.__doc__
    return call


def tool_error(tool: Any, args: dict[str, Any], context: Any, error: Exception) -> dict[str, Any]:
    """ADK's on_tool_error_callback: a tool's exception as its response."""
    return {"error": f"{type(error).__name__}: {error}"}


def _copy(value: Any) -> Any:
    import copy

    return copy.deepcopy(value)


class AdkDriver:
    """killpoint.Driver over one ADK Runner (scenarios.Driver)."""

    def __init__(self, scenario: Scenario, store_url: str, ledger: Ledger) -> None:
        from google.adk.agents import LlmAgent
        from google.adk.apps import App, ResumabilityConfig
        from google.adk.models.lite_llm import LiteLlm
        from google.adk.runners import Runner
        from google.adk.sessions import DatabaseSessionService

        self.scenario = scenario
        url = async_url(store_url)
        model = LiteLlm(
            model=MODEL,
            api_base=f"{model_url()}/v1",
            api_key=SCRIPTED_API_KEY,
            num_retries=scenario.max_retries,
            timeout=MODEL_TIMEOUT,
        )
        agent = LlmAgent(
            name=AGENT,
            model=model,
            instruction=scenario.instructions or "",
            tools=[adk_tool(fn) for fn in scenario.build_tools(ToolEnv(ledger))],
            # Without it ADK fails the whole invocation on a tool's exception; with it the
            # model reads the error as the call's response, as a user who wants that writes.
            on_tool_error_callback=tool_error,
        )
        app = App(
            name=APP,
            root_agent=agent,
            resumability_config=ResumabilityConfig(is_resumable=True),
        )
        self.service = DatabaseSessionService(url)
        self.runner = Runner(app=app, session_service=self.service)
        # run id -> (its loop, its abort_signal, set once its run_async has returned)
        self._aborts: dict[
            str, tuple[asyncio.AbstractEventLoop, asyncio.Event, threading.Event]
        ] = {}

    async def start(self, input: str, *, session_id: str, run_id: str) -> RunResult:
        from google.genai import types

        if await self._session(session_id) is None:
            await self.service.create_session(app_name=APP, user_id=USER, session_id=session_id)
        message = types.Content(role="user", parts=[types.Part(text=input)])
        return await self._run(run_id, session_id, message)

    async def resume(
        self, run_id: str, *, session_id: str, confirmations: Mapping[str, bool]
    ) -> RunResult:
        # ADK's own way to continue an invocation: run_async with its id and no message.
        return await self._run(run_id, session_id, None)

    def cancel(self, run_id: str) -> None:
        """ADK's cancel: the invocation's `abort_signal` set. The scripted model calls this
        from the thread that received the request for the cancel's turn, before it answers;
        it returns once the invocation has come to rest (ADK sealed it), so that the seal
        lands before the request is answered in every run, not as a race decides."""
        found = self._aborts.get(run_id)
        if found is None:
            return
        loop, signal, rested = found
        loop.call_soon_threadsafe(signal.set)
        rested.wait(CANCEL_WAIT)

    async def _run(self, run_id: str, session_id: str, message: Any) -> RunResult:
        import openai

        signal, rested = asyncio.Event(), threading.Event()
        self._aborts[run_id] = (asyncio.get_running_loop(), signal, rested)
        try:
            events = self.runner.run_async(
                user_id=USER,
                session_id=session_id,
                invocation_id=run_id,
                new_message=message,
                abort_signal=signal,
            )
            async for _ in events:
                pass
        except openai.APIError:
            # The model failed past LiteLLM's retries; ADK stored it as an error event
            # before raising. The status returned is read back from the store below.
            pass
        finally:
            self._aborts.pop(run_id, None)
            rested.set()
        return await self._result(run_id, session_id)

    async def _result(self, run_id: str, session_id: str) -> RunResult:
        """The run's status and answer as the store holds them: what is returned is durable."""
        session = await self._session(session_id)
        events = [
            e.model_dump(mode="json", exclude_none=True)
            for e in (session.events if session is not None else [])
            if e.invocation_id == run_id
        ]
        run = run_of(events)
        return RunResult(run_id=run_id, status=run["status"], content=run["content"])

    async def _session(self, session_id: str) -> Any:
        return await self.service.get_session(app_name=APP, user_id=USER, session_id=session_id)

    async def close(self) -> None:
        await self.service.close()
