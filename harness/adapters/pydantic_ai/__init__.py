"""pydantic-ai (PyPI `pydantic-ai-slim` 2.68 with its openai and dbos extras) made durable
by DBOS (PyPI `dbos` 3.4), unmodified, as a runtime under test.

- agent.py: the agent built from a scenario, the workflow that runs it, and the Driver;
- writes.py: the gates around DBOS's durable writes and the count of those that landed
  (workers only);
- system_db.py: the system database DBOS is given for a store URL (a SQLite file, or the
  cell's schema on PostgreSQL);
- reading.py: the engine's reads of DBOS's system database;
- normal.py: a session's workflows in the normal form, and their invariants.

The modes are how a pydantic-ai user gets durability from DBOS: every tool call a step of
its own, the batch's calls run concurrently (`steps`, pydantic-ai's default execution
mode) or one at a time (`steps-sequential`); or pydantic-ai's default, where only the
model requests are steps (`model-steps`: the replies are durable mid-run, no tool result
ever is, so a recovery runs every earlier tool call again). DBOS has no run lease: a
recovery claims a workflow whoever else runs it, and a stale execution's later writes are
refused by its ownership token (`owner_xid`); docs/pydantic-ai.md says which findings
follow from that design.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from killpoint.adapters.checkpoint_gates import CheckpointGates
from killpoint.adapters.protocol import RuntimeAdapter
from killpoint.errors import ModeError
from killpoint.values.findings import Finding
from killpoint.values.modes import Mode

# What the comparison leaves out: the model's call ids (fresh per reply, as in every adapter).
EXCLUDED = ("tool_call_id",)

STEPS = Mode(
    "steps",
    "DBOS steps for the model request and for every tool call (@DBOS.step): a recovery "
    "returns each recorded output and runs only the steps without one",
    results_per_call=True,
)
STEPS_SEQUENTIAL = Mode(
    "steps-sequential",
    "as steps, with DBOSDurability(parallel_execution_mode='sequential'): a batch's calls "
    "run one at a time, in order, each recorded before the next starts",
    results_per_call=True,
)
MODEL_STEPS = Mode(
    "model-steps",
    "pydantic-ai's default under DBOS: the model requests are steps, the tools run in "
    "workflow code, so a recovery runs every earlier tool call again",
    tool_results_durable=False,
)
MODES = (STEPS, STEPS_SEQUENTIAL, MODEL_STEPS)

PRELOAD_MODULES = (
    "killpoint.adapters.pydantic_ai.agent",
    "killpoint.adapters.pydantic_ai.normal",
    "killpoint.adapters.pydantic_ai.writes",
    "dbos",
    "dbos._sys_db",
    "dbos._sys_db_sqlite",
    "pydantic_ai",
    "pydantic_ai.durable_exec.dbos",
    "pydantic_ai.models.openai",
)

# A model fault ends the run in ERROR and the cell then continues it in place; DBOS's
# resume_workflow leaves an ERROR workflow as it is (dbos/_sys_db.py, resume_workflows).
ERROR_IS_TERMINAL = (
    "a DBOS workflow that ended in ERROR is terminal: DBOS.resume_workflow leaves it as it "
    "is, and continuing it is DBOS.fork_workflow to a new workflow id, where killpoint's "
    "driver contract continues a run under its own id"
)

DECLINED_KINDS = {
    "model-500": ERROR_IS_TERMINAL,
    "model-timeout": ERROR_IS_TERMINAL,
    "lock-held": (
        "DBOS sets PRAGMA busy_timeout=30000 on every connection of its SQLite system "
        "database and retries 'database is locked' without end: a held lock stalls the "
        "run by design, and the store URL's timeout cannot end it"
    ),
}


def import_problem() -> str | None:
    """Why pydantic-ai with DBOS cannot be used here (None: it can)."""
    try:
        import dbos  # noqa: F401
        import pydantic_ai.durable_exec.dbos
        import pydantic_ai.models.openai  # noqa: F401
    except ImportError as exc:
        return str(exc)
    return None


def _settings(mode: str) -> tuple[bool, str]:
    """(tools as DBOS steps, DBOSDurability's parallel_execution_mode) of a mode name."""
    if mode not in (m.name for m in MODES):
        names = ", ".join(m.name for m in MODES)
        raise ModeError(f"killpoint: pydantic-ai mode {mode!r} is unknown; choose from {names}")
    sequential = "sequential" if mode == STEPS_SEQUENTIAL.name else "parallel_ordered_events"
    return mode != MODEL_STEPS.name, sequential


class PydanticAIAdapter(RuntimeAdapter):
    """killpoint's adapter for pydantic-ai agents made durable by DBOS."""

    name = "pydantic-ai"
    modes: tuple[Mode, ...] = MODES
    excluded = EXCLUDED
    preload_modules: tuple[str, ...] = ("killpoint.adapters.pydantic_ai", *PRELOAD_MODULES)
    declined_kinds = DECLINED_KINDS

    def __repr__(self) -> str:
        return "PydanticAIAdapter()"

    def instrument(self, checkpoints: CheckpointGates) -> None:
        """Gate DBOS's three durable writes of a run (writes.py): the workflow's status
        row, each step's output, the terminal outcome; each counted in its transaction."""
        from killpoint.adapters.pydantic_ai.writes import instrument

        instrument(checkpoints)

    def driver(
        self, scenario: Any, store_url: str, mode: str, ledger: Any, *, lease_seconds: float
    ) -> Any:
        # DBOS has no lease: lease_seconds has nothing to set.
        from killpoint.adapters.pydantic_ai.agent import PydanticAIDriver

        steps, execution = _settings(mode)
        return PydanticAIDriver(scenario, store_url, mode, ledger, steps=steps, execution=execution)

    def unsupported(self, scenario: Any, mode: str) -> str | None:
        if scenario.confirm:
            return (
                "pydantic-ai answers a confirmation (a deferred tool) with a second agent run, "
                "so a second DBOS workflow under a new id: killpoint's driver contract "
                "continues a run under its own id"
            )
        if scenario.continue_on_error:
            return ERROR_IS_TERMINAL
        if scenario.state_invariant is not None:
            return (
                "pydantic-ai keeps no session state (a run's deps are not persisted): the "
                "scenario's tools have none to update"
            )
        return None

    # -- reading back -------------------------------------------------------------------

    def progress(self, store_url: str, session_id: str) -> int:
        from killpoint.adapters.pydantic_ai.reading import reader

        with reader(store_url) as r:
            return r.landed(session_id)

    def read_session(self, store_url: str, session_id: str) -> Any:
        from killpoint.adapters.pydantic_ai.normal import session
        from killpoint.adapters.pydantic_ai.reading import reader

        with reader(store_url) as r:
            return session(r, session_id)

    def inspect(self, store_url: str, session_id: str) -> Sequence[str | Finding]:
        from killpoint.adapters.pydantic_ai.normal import invariants
        from killpoint.adapters.pydantic_ai.reading import reader

        with reader(store_url) as r:
            return invariants(r, session_id)

    def lease_deadline(self, store_url: str, session_id: str) -> float | None:
        return None  # DBOS workflows have no lease


def adapter() -> PydanticAIAdapter:
    return PydanticAIAdapter()
