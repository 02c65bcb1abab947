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
import os
from collections.abc import Sequence
from typing import Any

from sqlalchemy import Engine, create_engine, event, text

from killpoint.adapters.agno.driver import (
    CHAINED_MODEL_ID,
    COUNTER_TABLE,
    RUNS_TABLE,
    SESSIONS_TABLE,
    TRANSCRIPT_MODEL_ID,
    AgnoDriver,
    count_landed,
    counter_table_for,
    instrumented,
    is_postgres,
    pg_schema,
    table_name,
)
from killpoint.adapters.agno.normal import (
    EXCLUDED,
    loads_json,
    normalise_run,
    run_invariants,
    strip,
)
from killpoint.adapters.checkpoint_gates import CheckpointGates
from killpoint.adapters.protocol import RuntimeAdapter
from killpoint.scenarios import Ledger, Scenario
from killpoint.stores.per_url import PerUrl
from killpoint.values.findings import Finding
from killpoint.values.modes import RUNS, TOOL_BATCH, Mode
from killpoint.values.sentences import count

# agno reports usage to its servers unless told not to; workers have no network.
os.environ.setdefault("AGNO_TELEMETRY", "false")


def import_problem() -> str | None:
    """Why agno cannot be used here (None: it can)."""
    try:
        import agno.agent
        import agno.db.sqlite  # noqa: F401  (needs greenlet under SQLAlchemy 2.1)
    except ImportError as exc:
        return str(exc)
    return None


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
            instrumented.session_id = session.session_id
            instrumented.run_id = run_response.run_id
            instrumented.counter_table = counter_table_for(agent)

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
        event.listen(Engine, "after_cursor_execute", count_landed(checkpoints))

    def driver(
        self, scenario: Scenario, store_url: str, mode: str, ledger: Ledger, *, lease_seconds: float
    ) -> AgnoDriver:
        # agno has no lease: a run has no owner, so lease_seconds has nothing to set.
        return AgnoDriver(scenario, store_url, mode, ledger, model_id=self.model_id)

    # -- reading back -------------------------------------------------------------------

    def progress(self, store_url: str, session_id: str) -> int:
        engine = _engine(store_url)
        table = table_name(store_url, COUNTER_TABLE)
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
                        f"SELECT * FROM {table_name(store_url, SESSIONS_TABLE)} WHERE session_id = :s"
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
                            f"SELECT * FROM {table_name(store_url, RUNS_TABLE)} WHERE session_id = :s "
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
        data = loads_json(session.get("session_data")) if session is not None else None
        state = strip(data) if data is not None else None
        runs = {row["run_id"]: normalise_run(row) for row in rows}
        return {"state": state, "runs": runs}

    def inspect(self, store_url: str, session_id: str) -> Sequence[str | Finding]:
        problems: list[str | Finding] = []
        engine = _engine(store_url)
        if not is_postgres(store_url):
            with engine.connect() as conn:
                verdict = conn.execute(text("PRAGMA integrity_check")).scalar_one()
            if verdict != "ok":
                problems.append(f"SQLite integrity_check: {verdict}")
        session, rows = self._rows(store_url, session_id)
        if rows and session is None:
            problems.append(
                f"{count(len(rows), 'run row')} of session {session_id!r} but no session row"
            )
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
                {"schema": pg_schema(store_url) or "ai", "name": name},
            ).first()
        )
    return bool(
        conn.execute(
            text("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name"),
            {"name": name},
        ).first()
    )


# -- normalising ----------------------------------------------------------------------------
