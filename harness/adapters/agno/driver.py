"""agno's store and driver: the agent built from a scenario, started, resumed and
cancelled in a worker, and the counter of landed checkpoints."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Mapping
from typing import Any

from killpoint.adapters.checkpoint_gates import CheckpointGates
from killpoint.scenarios import Ledger, RunResult, Scenario, ToolEnv
from killpoint.scenarios.tooling import SESSION_STATE
from killpoint.stores import kind_of_url
from killpoint.stores.postgresql import schema_of

SCRIPTED_API_KEY = "sk-killpoint-scripted-model"

# Two ways agno talks to the Responses API, chosen by the model id
# (`OpenAIResponses._using_reasoning_model`): non-reasoning ids resend the whole
# transcript every turn; reasoning ids (o3, o4-mini, gpt-5*, gpt-6*) chain turns with
# `previous_response_id` and send only what is new.
TRANSCRIPT_MODEL_ID = "gpt-4.1-mini"
CHAINED_MODEL_ID = "gpt-5-mini"

# The table where instrumented workers count the checkpoints that landed (see
# `AgnoAdapter.instrument`). agno keeps no such counter.
COUNTER_TABLE = "killpoint_checkpoints"
RUNS_TABLE = "agno_runs"
SESSIONS_TABLE = "agno_sessions"


# -- stores ---------------------------------------------------------------------------------


def pg_schema(url: str) -> str | None:
    return schema_of(url)


def is_postgres(url: str) -> bool:
    return kind_of_url(url) == "postgresql"


def make_db(store_url: str) -> Any:
    """agno's own database class for a killpoint store URL."""
    if is_postgres(store_url):
        from agno.db.postgres import PostgresDb

        # agno qualifies every table with db_schema ("ai" by default); each killpoint
        # PostgreSQL store is a schema of its own.
        return PostgresDb(db_url=store_url, db_schema=pg_schema(store_url) or "ai")
    from agno.db.sqlite import SqliteDb

    # db_url rather than db_file: the URL's query (e.g. the lock timeout of the lock-held
    # column) reaches the driver.
    return SqliteDb(db_url=store_url)


def table_name(store_url: str, name: str) -> str:
    if is_postgres(store_url):
        return f'"{pg_schema(store_url) or "ai"}".{name}'
    return name


# -- the driver -----------------------------------------------------------------------------


class AgnoDriver:
    """Builds an agno `Agent` from a scenario and drives it (scenarios.Driver)."""

    def __init__(
        self,
        scenario: Scenario,
        store_url: str,
        mode: str,
        ledger: Ledger,
        *,
        model_id: str = TRANSCRIPT_MODEL_ID,
    ) -> None:
        from agno.agent import Agent
        from agno.models.openai import OpenAIResponses
        from agno.tools import tool

        self.scenario = scenario
        self._last: dict[str, Any] = {}  # run_id -> the RunOutput agno last returned
        tools: list[Any] = []
        for fn in scenario.build_tools(ToolEnv(ledger)):
            if SESSION_STATE in inspect.signature(fn).parameters:
                fn = _with_session_state(fn)
            if fn.__name__ in scenario.confirm:
                tools.append(tool(requires_confirmation=True)(fn))
            else:
                tools.append(fn)
        self.db = make_db(store_url)
        self.agent = Agent(
            name=scenario.name,
            model=OpenAIResponses(
                id=model_id, api_key=SCRIPTED_API_KEY, max_retries=scenario.max_retries
            ),
            db=self.db,
            tools=tools,
            instructions=scenario.instructions,
            checkpoint=mode,  # type: ignore[arg-type]  # one of MODES, checked by the engine
            # Several runs in one session answer from the earlier runs (multi-run).
            add_history_to_context=True,
            telemetry=False,
        )

    async def start(self, input: str, *, session_id: str, run_id: str) -> RunResult:
        out = await self.agent.arun(input, session_id=session_id, run_id=run_id)
        self._last[run_id] = out
        return _result(out)

    async def resume(
        self, run_id: str, *, session_id: str, confirmations: Mapping[str, bool]
    ) -> RunResult:
        # agno's pattern: answer the requirements of the PAUSED RunOutput it returned, then
        # acontinue_run(run_id=..., requirements=...). A fresh worker (after a crash) has
        # no RunOutput in hand: it reads the run back from agno's db and answers as the
        # scenario says.
        paused = self._last.get(run_id)
        if paused is None or not paused.active_requirements:
            paused = await self.agent.aget_run_output(run_id=run_id, session_id=session_id)
        requirements = None
        if paused is not None and paused.active_requirements:
            requirements = paused.requirements
            for req in paused.active_requirements:
                call = req.tool_execution
                cid = call.tool_call_id if call is not None else None
                name = call.tool_name if call is not None else ""
                if cid is not None and cid in confirmations:
                    ok = confirmations[cid]
                else:
                    ok = self.scenario.confirm.get(str(name or ""), True)
                if ok:
                    req.confirm()
                else:
                    req.reject()
        out = await self.agent.acontinue_run(
            run_id=run_id, session_id=session_id, requirements=requirements
        )
        self._last[run_id] = out
        return _result(out)

    def cancel(self, run_id: str) -> None:
        self.agent.cancel_run(run_id)

    def dispose(self) -> None:
        self.db.db_engine.dispose()


def _with_session_state(fn: Any) -> Any:
    """A scenario tool that takes `session_state`, as agno hands it over: agno injects its
    `run_context` (hidden from the model by name) and the tool gets the context's
    `session_state`, the dict agno persists with the session."""

    def call(**kwargs: Any) -> Any:
        context = kwargs.pop("run_context")
        if context.session_state is None:
            context.session_state = {}
        return fn(**kwargs, session_state=context.session_state)

    signature = inspect.signature(fn)
    call.__signature__ = signature.replace(  # type: ignore[attr-defined]
        parameters=[
            p.replace(name="run_context", annotation=inspect.Parameter.empty)
            if p.name == SESSION_STATE
            else p
            for p in signature.parameters.values()
        ]
    )
    call.__annotations__ = {
        k: v for k, v in getattr(fn, "__annotations__", {}).items() if k != SESSION_STATE
    }
    call.__name__, call.__doc__ = fn.__name__, fn.__doc__
    return call


def _result(out: Any) -> RunResult:
    pending = []
    for req in getattr(out, "active_requirements", None) or []:
        call = req.tool_execution
        if call is not None:
            pending.append((call.tool_call_id or "", call.tool_name or ""))
    status = out.status.value if hasattr(out.status, "value") else str(out.status)
    content = (
        out.content if isinstance(out.content, str) or out.content is None else str(out.content)
    )
    return RunResult(run_id=out.run_id, status=status, content=content, pending=pending)


# -- instrumentation ------------------------------------------------------------------------

instrumented = threading.local()


def counter_table_for(agent: Any) -> str:
    db = getattr(agent, "db", None)
    schema = getattr(db, "db_schema", None)
    return f'"{schema}".{COUNTER_TABLE}' if schema else COUNTER_TABLE


def count_landed(checkpoints: CheckpointGates) -> Any:
    def after_execute(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        """After agno's INSERT .. ON CONFLICT into agno_runs, inside the same transaction:
        one row in the counter table for the checkpoint being written."""
        n = checkpoints.current()
        if n is None or getattr(instrumented, "counted", None) == n:
            return
        head = statement.lstrip()[:120].upper()
        if not head.startswith("INSERT INTO") or RUNS_TABLE.upper() not in head:
            return
        instrumented.counted = n
        table = getattr(instrumented, "counter_table", COUNTER_TABLE)
        mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
        raw = cursor.connection.cursor()
        try:
            raw.execute(
                f"CREATE TABLE IF NOT EXISTS {table} "
                "(n INTEGER NOT NULL, session_id VARCHAR NOT NULL, run_id VARCHAR)"
            )
            raw.execute(
                f"INSERT INTO {table} (n, session_id, run_id) VALUES ({mark}, {mark}, {mark})",
                (n, instrumented.session_id, instrumented.run_id),
            )
        finally:
            raw.close()

    return after_execute


# -- the adapter ----------------------------------------------------------------------------
