"""agno (PyPI `agno` 3.1.x), unmodified, as a runtime under test.

The driver builds an `agno.agent.Agent` from a scenario: the scenario's own tools (a
tool that needs confirmation goes through agno's `@tool(requires_confirmation=True)`),
agno's default `OpenAIResponses` client (which the scripted model answers over respx),
`SqliteDb` or `PostgresDb`, and `checkpoint=` the cell's mode. Nothing of agno is
patched in the driver: `instrument()` (workers only) wraps agno's one durable write,
`persist_run_in_session`, to place the engine's gates around it.

Reading back goes to agno's tables (`agno_sessions`, `agno_runs`) with plain SQL, and
maps a run into the normalised form of the reference adapter (same keys), plus every
other field agno persists, minus `EXCLUDED`.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
import os
import threading
from collections.abc import Mapping
from typing import Any

from sqlalchemy import Engine, create_engine, event, text

from killpoint.scenarios import Ledger, RunResult, Scenario, ToolEnv
from killpoint.scenarios.tooling import SESSION_STATE

from ..adapter import RuntimeAdapter
from ..checkpoint_gates import CheckpointGates
from ..findings import Finding
from ..modes import RUNS, TOOL_BATCH, Mode
from ..per_url import PerUrl
from ..stores import kind_of_url
from ..stores.postgresql import schema_of

# agno reports usage to its servers unless told not to; workers have no network.
os.environ.setdefault("AGNO_TELEMETRY", "false")

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

# What the comparison leaves out, and why. Ids are fresh per run or derived from
# response ids; times and durations differ by construction.
EXCLUDED = (
    # ids
    "run_id",
    "session_id",
    "id",  # message ids (uuid4)
    "tool_call_id",
    "call_id",
    "response_id",  # provider_data / model_provider_data: the scripted model's reply id
    "approval_id",
    # timestamps
    "created_at",
    "updated_at",
    "checkpoint_created_at",
    "start_time",
    "end_time",
    # durations
    "duration",
    "time_to_first_token",
    "timer",
)

_STATUSES = ("PENDING", "RUNNING", "PAUSED", "COMPLETED", "ERROR", "CANCELLED", "REGENERATED")


def import_problem() -> str | None:
    """Why agno cannot be used here (None: it can)."""
    try:
        import agno.agent
        import agno.db.sqlite  # noqa: F401  (needs greenlet under SQLAlchemy 2.1)
    except ImportError as exc:
        return str(exc)
    return None


# -- stores ---------------------------------------------------------------------------------


def _pg_schema(url: str) -> str | None:
    return schema_of(url)


def is_postgres(url: str) -> bool:
    return kind_of_url(url) == "postgresql"


def make_db(store_url: str) -> Any:
    """agno's own database class for a killpoint store URL."""
    if is_postgres(store_url):
        from agno.db.postgres import PostgresDb

        # agno qualifies every table with db_schema ("ai" by default); each killpoint
        # PostgreSQL store is a schema of its own.
        return PostgresDb(db_url=store_url, db_schema=_pg_schema(store_url) or "ai")
    from agno.db.sqlite import SqliteDb

    # db_url rather than db_file: the URL's query (e.g. the lock timeout of the lock-held
    # column) reaches the driver.
    return SqliteDb(db_url=store_url)


def _table(store_url: str, name: str) -> str:
    if is_postgres(store_url):
        return f'"{_pg_schema(store_url) or "ai"}".{name}'
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
            checkpoint=mode,
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
                if cid in confirmations:
                    ok = confirmations[cid]
                else:
                    ok = self.scenario.confirm.get(name or "", True)
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

_local = threading.local()


def _counter_table_for(agent: Any) -> str:
    db = getattr(agent, "db", None)
    schema = getattr(db, "db_schema", None)
    return f'"{schema}".{COUNTER_TABLE}' if schema else COUNTER_TABLE


def _count_landed(checkpoints: CheckpointGates) -> Any:
    def after_execute(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
        """After agno's INSERT .. ON CONFLICT into agno_runs, inside the same transaction:
        one row in the counter table for the checkpoint being written."""
        n = checkpoints.current()
        if n is None or getattr(_local, "counted", None) == n:
            return
        head = statement.lstrip()[:120].upper()
        if not head.startswith("INSERT INTO") or RUNS_TABLE.upper() not in head:
            return
        _local.counted = n
        table = getattr(_local, "counter_table", COUNTER_TABLE)
        mark = "?" if conn.dialect.paramstyle == "qmark" else "%s"
        raw = cursor.connection.cursor()
        try:
            raw.execute(
                f"CREATE TABLE IF NOT EXISTS {table} "
                "(n INTEGER NOT NULL, session_id VARCHAR NOT NULL, run_id VARCHAR)"
            )
            raw.execute(
                f"INSERT INTO {table} (n, session_id, run_id) VALUES ({mark}, {mark}, {mark})",
                (n, _local.session_id, _local.run_id),
            )
        finally:
            raw.close()

    return after_execute


# -- the adapter ----------------------------------------------------------------------------


class AgnoAdapter(RuntimeAdapter):
    """killpoint's adapter for agno. `model_id` picks the conversation style."""

    name = "agno"
    modes: tuple[Mode, ...] = (
        RUNS,
        TOOL_BATCH,
        Mode(
            "tool",
            "persisted after every tool result (agno's checkpoint='tools')",
            results_per_call=True,
            unavailable='agno 3.1 reserves checkpoint="tools" ("not available yet") and raises on it',
        ),
    )
    excluded = EXCLUDED

    def __init__(self, model_id: str = TRANSCRIPT_MODEL_ID) -> None:
        self.model_id = model_id

    def __repr__(self) -> str:
        return f"AgnoAdapter(model_id={self.model_id!r})"

    @property
    def preload_modules(self) -> tuple[str, ...]:  # type: ignore[override]
        return ("killpoint.adapters.agno", *PRELOAD_MODULES)

    def instrument(self, checkpoints: CheckpointGates) -> None:
        """Wrap agno's `persist_run_in_session` (and its async twin) in this worker.

        That function is agno's one durable write of a run: every mid-run checkpoint
        (`checkpoint_run`) and every terminal write (`cleanup_and_store`: COMPLETED,
        PAUSED, ERROR, CANCELLED) goes through it. It is two transactions: the session
        row (`upsert_session`), then the run row (`upsert_run`); each COMMIT inside it
        hits `committing` (so the engine's mid-commit point, the last commit, falls
        between the two). The run row's INSERT also adds one row to
        `killpoint_checkpoints` in the same transaction, so `progress()` counts exactly
        the checkpoints whose run row committed.
        """
        from agno.agent import _run

        def remember(agent: Any, run_response: Any, session: Any) -> None:
            _local.session_id = session.session_id
            _local.run_id = run_response.run_id
            _local.counter_table = _counter_table_for(agent)

        sync_write = checkpoints.wrap(_run.persist_run_in_session)
        async_write = checkpoints.wrap(_run.apersist_run_in_session)

        def persist_run_in_session(
            agent: Any, run_response: Any, session: Any, *a: Any, **k: Any
        ) -> None:
            remember(agent, run_response, session)
            sync_write(agent, run_response, session, *a, **k)

        async def apersist_run_in_session(
            agent: Any, run_response: Any, session: Any, *a: Any, **k: Any
        ) -> None:
            remember(agent, run_response, session)
            await async_write(agent, run_response, session, *a, **k)

        _run.persist_run_in_session = persist_run_in_session
        _run.apersist_run_in_session = apersist_run_in_session
        checkpoints.watch_sqlalchemy()
        event.listen(Engine, "after_cursor_execute", _count_landed(checkpoints))

    def driver(
        self, scenario: Scenario, store_url: str, mode: str, ledger: Ledger, *, lease_seconds: float
    ) -> AgnoDriver:
        # agno has no lease: a run has no owner, so lease_seconds has nothing to set.
        return AgnoDriver(scenario, store_url, mode, ledger, model_id=self.model_id)

    # -- reading back -------------------------------------------------------------------

    def progress(self, store_url: str, session_id: str) -> int:
        engine = _engine(store_url)
        table = _table(store_url, COUNTER_TABLE)
        with engine.connect() as conn:
            if not _has_table(conn, store_url, COUNTER_TABLE):
                return 0
            return int(
                conn.execute(
                    text(f"SELECT COUNT(*) FROM {table} WHERE session_id = :s"), {"s": session_id}
                ).scalar_one()
            )

    def lease_deadline(self, store_url: str, session_id: str) -> float | None:
        return None  # agno runs have no owner and no lease

    def _rows(
        self, store_url: str, session_id: str
    ) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
        engine = _engine(store_url)
        with engine.connect() as conn:
            if not _has_table(conn, store_url, SESSIONS_TABLE):
                return None, []
            session = (
                conn.execute(
                    text(
                        f"SELECT * FROM {_table(store_url, SESSIONS_TABLE)} WHERE session_id = :s"
                    ),
                    {"s": session_id},
                )
                .mappings()
                .one_or_none()
            )
            runs: list[dict[str, Any]] = []
            if _has_table(conn, store_url, RUNS_TABLE):
                runs = [
                    dict(r)
                    for r in conn.execute(
                        text(
                            f"SELECT * FROM {_table(store_url, RUNS_TABLE)} WHERE session_id = :s "
                            "ORDER BY run_index, created_at, run_id"
                        ),
                        {"s": session_id},
                    ).mappings()
                ]
        return (dict(session) if session is not None else None), runs

    def read_session(self, store_url: str, session_id: str) -> dict[str, Any] | None:
        session, rows = self._rows(store_url, session_id)
        if session is None and not rows:
            return None
        data = _json(session.get("session_data")) if session is not None else None
        state = strip(data) if data is not None else None
        runs = {row["run_id"]: normalise_run(row) for row in rows}
        return {"state": state, "runs": runs}

    def inspect(self, store_url: str, session_id: str) -> list[str | Finding]:
        problems: list[str | Finding] = []
        engine = _engine(store_url)
        if not is_postgres(store_url):
            with engine.connect() as conn:
                verdict = conn.execute(text("PRAGMA integrity_check")).scalar_one()
            if verdict != "ok":
                problems.append(f"SQLite integrity_check: {verdict}")
        session, rows = self._rows(store_url, session_id)
        if rows and session is None:
            problems.append(f"{len(rows)} run row(s) of session {session_id!r} but no session row")
        for row in rows:
            problems.extend(_for_run(row["run_id"], p) for p in run_invariants(row))
        return problems


def _for_run(run_id: str, problem: str | Finding) -> str | Finding:
    if isinstance(problem, str):
        return f"run {run_id}: {problem}"
    return dataclasses.replace(problem, sentence=f"run {run_id}: {problem.sentence}")


def chained() -> AgnoAdapter:
    """agno with a reasoning model id: turns chained with previous_response_id
    (`--runtime killpoint.adapters.agno:chained`)."""
    adapter = AgnoAdapter(CHAINED_MODEL_ID)
    adapter.name = "killpoint.adapters.agno:chained"
    return adapter


PRELOAD_MODULES = (
    "agno.agent",
    "agno.agent._run",
    "agno.agent._messages",
    "agno.agent._response",
    "agno.agent._storage",
    "agno.agent._tools",
    "agno.db.sqlite",
    "agno.db.postgres",
    "agno.models.openai",
    "agno.models.openai.responses",
    "agno.tools",
    "agno.run.agent",
)


# -- engines --------------------------------------------------------------------------------

_engine: PerUrl[Engine] = PerUrl(create_engine, Engine.dispose)


def _has_table(conn: Any, store_url: str, name: str) -> bool:
    if is_postgres(store_url):
        return bool(
            conn.execute(
                text(
                    "SELECT 1 FROM information_schema.tables "
                    "WHERE table_schema = :schema AND table_name = :name"
                ),
                {"schema": _pg_schema(store_url) or "ai", "name": name},
            ).first()
        )
    return bool(
        conn.execute(
            text("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name"),
            {"name": name},
        ).first()
    )


# -- normalising ----------------------------------------------------------------------------


def _json(value: Any) -> Any:
    if isinstance(value, (str, bytes)):
        return json.loads(value)
    return value


def strip(value: Any) -> Any:
    """`value` without the EXCLUDED keys (at any depth) and without empty values, which
    agno writes or omits interchangeably (None, {}, [] are all "nothing")."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in EXCLUDED:
                continue
            v = strip(v)
            if v is None or v == {} or v == []:
                continue
            out[k] = v
        return out
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def _arguments(raw: Any) -> str:
    return raw if isinstance(raw, str) else json.dumps(raw, sort_keys=True)


def _calls(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "name": (c.get("function") or {}).get("name"),
            "arguments": _arguments((c.get("function") or {}).get("arguments") or "{}"),
        }
        for c in message.get("tool_calls") or []
    ]


def _call_positions(messages: list[Mapping[str, Any]]) -> dict[str, tuple[int, int]]:
    """tool_call_id -> (1-based model turn, index in that turn's batch)."""
    positions: dict[str, tuple[int, int]] = {}
    turn = 0
    for m in messages:
        if m.get("role") != "assistant":
            continue
        turn += 1
        for i, c in enumerate(m.get("tool_calls") or []):
            for key in ("id", "call_id"):
                if c.get(key):
                    positions[c[key]] = (turn, i)
    return positions


def _pending(t: Mapping[str, Any]) -> bool:
    """A call waiting for the user's confirmation: not executed, no result."""
    return bool(t.get("requires_confirmation")) and t.get("confirmed") is None


def _tool_status(t: Mapping[str, Any]) -> str:
    if t.get("confirmed") is False:
        return "rejected"
    return "error" if t.get("tool_call_error") else "ok"


_MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_name", "tool_call_error")
_TOOL_KEYS = ("tool_name", "tool_args", "result", "tool_call_error", "confirmed")
_RUN_KEYS = (
    "input",
    "status",
    "content",
    "metrics",
    "last_checkpoint_at_message_index",
    "requirements",
    "messages",
    "tools",
)


def normalise_run(row: Mapping[str, Any]) -> dict[str, Any]:
    """One agno run row in the reference adapter's form, then agno's other fields."""
    data = _json(row["run_data"])
    messages: list[dict[str, Any]] = list(data.get("messages") or [])
    tools: list[dict[str, Any]] = list(data.get("tools") or [])
    positions = _call_positions(messages)
    metrics = data.get("metrics") or {}
    usage = strip({k: v for k, v in metrics.items() if k != "details"})
    requirements = data.get("requirements") or []
    pending = [
        (r.get("tool_execution") or {}).get("tool_name", "?")
        for r in requirements
        if r.get("confirmation") is None
        and (r.get("tool_execution") or {}).get("requires_confirmation")
    ]
    out: dict[str, Any] = {
        "input": (data.get("input") or {}).get("input_content"),
        "status": row.get("status") or data.get("status"),
        "content": data.get("content"),
        "error": data.get("content") if (row.get("status") == "ERROR") else None,
        "usage": usage,
        "last_checkpoint_at_message_index": data.get("last_checkpoint_at_message_index"),
        "pending_confirmations": pending,
        "messages": [
            {
                "role": m.get("role"),
                "content": m.get("content"),
                "tool_calls": _calls(m),
                "name": m.get("tool_name"),
                "status": (
                    None
                    if m.get("role") != "tool"
                    else ("error" if m.get("tool_call_error") else "ok")
                ),
                **strip({k: v for k, v in m.items() if k not in _MESSAGE_KEYS}),
            }
            for m in messages
        ],
        "tool_executions": [
            {
                "name": t.get("tool_name"),
                "arguments": _arguments(t.get("tool_args") or {}),
                "result": t.get("result"),
                "status": _tool_status(t),
                "turn": positions.get(t.get("tool_call_id") or "", (None, None))[0],
                "call_index": positions.get(t.get("tool_call_id") or "", (None, None))[1],
                **strip({k: v for k, v in t.items() if k not in _TOOL_KEYS}),
            }
            for t in tools
            if not _pending(t)
        ],
        # agno keeps calls that wait for confirmation among its tool executions; they
        # have not run, so they are listed apart.
        "pending_tool_calls": [
            {"name": t.get("tool_name"), "arguments": _arguments(t.get("tool_args") or {})}
            for t in tools
            if _pending(t)
        ],
    }
    # Everything else agno persists about the run (metrics details, requirements, events...).
    out.update(strip({k: v for k, v in data.items() if k not in _RUN_KEYS and k not in out}))
    if metrics.get("details"):
        out["metrics_details"] = strip(metrics["details"])
    if requirements:
        out["requirements"] = strip(requirements)
    return out


def run_invariants(row: Mapping[str, Any]) -> list[str | Finding]:
    """What must hold of an agno run row at any moment, crash or not, by agno's own
    definitions: a RUNNING row is a checkpoint (`checkpoint_run` sets
    last_checkpoint_at_message_index to the number of messages it writes); no batch is
    half-written; every call with a result has a tool execution."""
    problems: list[str | Finding] = []
    data = _json(row["run_data"])
    status = row.get("status")
    if status not in _STATUSES:
        problems.append(f"unknown status {status!r}")
    if data.get("status") != status:
        problems.append(f"status column {status!r} but run_data says {data.get('status')!r}")
    messages = list(data.get("messages") or [])
    mark = data.get("last_checkpoint_at_message_index")
    if mark is not None and mark > len(messages):
        # agno counts the history it sent the model (add_history_to_context) and stores
        # the run without it; its own resume truncates to the mark and loses nothing, so
        # the stale mark is an inconsistency, not a broken store.
        problems.append(
            Finding(
                "inconsistency",
                f"last_checkpoint_at_message_index {mark} beyond {len(messages)} messages",
                path="last_checkpoint_at_message_index",
                expected_value=len(messages),
                actual_value=mark,
            )
        )
    elif status == "RUNNING" and mark != len(messages):
        problems.append(
            f"RUNNING with {len(messages)} messages but last_checkpoint_at_message_index is {mark}"
        )
    executed = {t.get("tool_call_id") for t in data.get("tools") or [] if not _pending(t)}
    waiting = {
        (r.get("tool_execution") or {}).get("tool_call_id")
        for r in data.get("requirements") or []
        if r.get("confirmation") is None
        and (r.get("tool_execution") or {}).get("requires_confirmation")
    }
    for n, m in enumerate(messages):
        if m.get("role") != "assistant" or not m.get("tool_calls"):
            continue
        ids = [c.get("id") for c in m["tool_calls"]]
        answers = [
            x.get("tool_call_id")
            for x in messages[n + 1 : n + 1 + len(ids)]
            if x.get("role") == "tool"
        ]
        if n + 1 == len(messages):
            # A trailing batch without results: a pause (agno may checkpoint it RUNNING
            # just before it writes PAUSED), every call of it waiting for confirmation.
            if status != "PAUSED" and not set(ids) <= waiting:
                problems.append(f"{status} run ends with a batch that has no results")
            continue
        if sorted(answers) != sorted(ids):
            problems.append(
                f"half-written batch at message {n}: calls {ids}, results for {answers}"
            )
        missing = [c for c in answers if c not in executed]
        if missing:
            problems.append(f"calls {missing} at message {n} have no tool execution")
    return problems
