"""LangGraph (PyPI `langgraph` 1.2, with its SQLite and PostgreSQL savers), unmodified, as a
runtime under test.

- agent.py: the StateGraph agent built from a scenario, and the Driver over it;
- savers.py: LangGraph's async savers on a killpoint store, and the gates around their
  durable writes (workers only);
- reading.py: the engine's reads of a store (the checkpoint tree, single checkpoints
  through LangGraph's sync savers, the count of landed writes);
- normal.py: the checkpoint chain as runs in the normal form, how a run's status is
  derived (LangGraph stores none), and the invariants of a thread.

The modes are LangGraph's `durability` levels (and the batch as one task or one `Send`
per call). Run ownership (one worker per run, a stale worker fenced) lives in LangGraph's
server product, not in the open-source library and its checkpointers: killpoint holds
LangGraph to the same contract as every runtime, and docs/langgraph.md says which of its
findings follow from that design.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from killpoint.adapters.checkpoint_gates import CheckpointGates
from killpoint.adapters.protocol import RuntimeAdapter
from killpoint.errors import ModeError
from killpoint.values.findings import Finding
from killpoint.values.modes import Mode

# What the comparison leaves out: ids that are fresh per run (message ids are uuid4s
# LangGraph gives every message; call ids are the model's, excluded as in every adapter).
EXCLUDED = ("id", "tool_call_id")

SYNC = Mode(
    "sync",
    'durability="sync": each superstep\'s checkpoint is written before the next superstep starts',
)
ASYNC = Mode(
    "async",
    'durability="async" (LangGraph\'s default): checkpoints are written in the background, '
    "behind the run",
    # Measured: research's writes land from one to several supersteps late, in an order
    # that differs between runs. `exit` writes once per exit, after the graph's last step,
    # and its traces are the same run after run: it does not lag.
    writes_lag=True,
)
EXIT = Mode(
    "exit",
    'durability="exit": written only when the graph exits (ends, fails or is interrupted)',
    persists_mid_run=False,
)
SYNC_SEND = Mode(
    "sync-send",
    'durability="sync" with one Send task per tool call: each finished call\'s result is a '
    "pending write of its own, and a resume runs only the calls without one",
    results_per_call=True,
)
MODES = (SYNC, ASYNC, EXIT, SYNC_SEND)

PRELOAD_MODULES = (
    "killpoint.adapters.langgraph.agent",
    "killpoint.adapters.langgraph.normal",
    "aiosqlite",
    "psycopg",
    "langgraph.checkpoint.sqlite",
    "langgraph.checkpoint.sqlite.aio",
    "langgraph.checkpoint.postgres",
    "langgraph.checkpoint.postgres.aio",
)


def import_problem() -> str | None:
    """Why LangGraph cannot be used here (None: it can)."""
    try:
        import langgraph.checkpoint.postgres.aio
        import langgraph.checkpoint.sqlite.aio
        import langgraph.graph
        import langgraph.prebuilt  # noqa: F401
    except ImportError as exc:
        return str(exc)
    return None


def _durability(mode: str) -> tuple[str, bool]:
    """(LangGraph durability, one Send task per call) of a mode name."""
    durability, _, send = mode.partition("-")
    if durability not in ("sync", "async", "exit") or send not in ("", "send"):
        names = ", ".join(m.name for m in MODES)
        raise ModeError(f"killpoint: LangGraph mode {mode!r} is unknown; choose from {names}")
    return durability, send == "send"


class LangGraphAdapter(RuntimeAdapter):
    """killpoint's adapter for LangGraph."""

    name = "langgraph"
    modes: tuple[Mode, ...] = MODES
    excluded = EXCLUDED
    preload_modules: tuple[str, ...] = ("killpoint.adapters.langgraph", *PRELOAD_MODULES)

    def __repr__(self) -> str:
        return "LangGraphAdapter()"

    def instrument(self, checkpoints: CheckpointGates) -> None:
        """Gate LangGraph's two durable writes (savers.instrument): a checkpoint (`aput`)
        and a task's pending writes (`aput_writes`), each counted in the same transaction."""
        from killpoint.adapters.langgraph.savers import instrument

        instrument(checkpoints)

    def driver(
        self, scenario: Any, store_url: str, mode: str, ledger: Any, *, lease_seconds: float
    ) -> Any:
        # LangGraph has no lease: a run has no owner, so lease_seconds has nothing to set.
        from killpoint.adapters.langgraph.agent import LangGraphDriver

        durability, send = _durability(mode)
        return LangGraphDriver(scenario, store_url, durability, ledger, send=send)

    def unsupported(self, scenario: Any, mode: str) -> str | None:
        if scenario.cancel_at_turn is not None:
            return (
                "open-source LangGraph has no run cancellation: a run is stopped by cancelling "
                "the task that invokes the graph, and nothing durable says it was cancelled "
                "(cancelling runs is LangGraph's server product's)"
            )
        if scenario.state_invariant is not None:
            return (
                "killpoint's LangGraph graph keeps MessagesState only: it has no session "
                "state for the scenario's tools to update"
            )
        return None

    # -- reading back -------------------------------------------------------------------

    def progress(self, store_url: str, session_id: str) -> int:
        from killpoint.adapters.langgraph.reading import reader

        with reader(store_url) as r:
            return r.landed(session_id)

    def read_session(self, store_url: str, session_id: str) -> Any:
        from killpoint.adapters.langgraph.normal import session
        from killpoint.adapters.langgraph.reading import reader

        with reader(store_url) as r:
            return session(r, session_id)

    def inspect(self, store_url: str, session_id: str) -> Sequence[str | Finding]:
        from killpoint.adapters.langgraph.normal import invariants
        from killpoint.adapters.langgraph.reading import reader

        with reader(store_url) as r:
            return invariants(r, session_id)

    def lease_deadline(self, store_url: str, session_id: str) -> float | None:
        return None  # LangGraph runs have no owner and no lease
