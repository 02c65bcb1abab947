"""The store server restarts under a run.

store-restart:K          the PostgreSQL server restarts (immediate shutdown, then start)
                         while the worker is about to write checkpoint K: every
                         connection it holds dies. The run must finish correctly or fail
                         without losing anything it acknowledged, and a fresh worker must
                         continue it.
store-restart-commit:K   the same, inside checkpoint K's transaction before its COMMIT
                         (where the adapter marks commits): the transaction dies with
                         its connection.

killpoint restarts only a server it is told how to restart (KILLPOINT_STORE_RESTART, a
command); SQLite has no server. Such cells are skipped with the reason. Opt in with
`--points store-restart` (or the `restarts` group): a restart cuts off every cell that
uses the server at that moment, so they are not part of `all`.
"""

from __future__ import annotations

import os

from killpoint.errors import PointError
from killpoint.judge.baseline import Baseline
from killpoint.kinds.base import CellContext, Plan
from killpoint.scenarios import gates
from killpoint.stores import per_url
from killpoint.stores.outage import outage_finding
from killpoint.stores.postgresql import RESTART_ENV, RESTART_HINT
from killpoint.values.findings import Finding
from killpoint.values.points import CrashPoint
from killpoint.values.sentences import count

RESTART_WAIT = 60.0  # seconds for the server to answer again after its restart


def restart_problem(store_kind: str) -> str | None:
    """Why killpoint cannot restart the store server here, or None."""
    if store_kind != "postgresql":
        return (
            "store-restart needs a store server to restart; SQLite has none (run it with "
            "--store postgresql+psycopg://...)"
        )
    if not os.environ.get(RESTART_ENV, "").strip():
        return "killpoint cannot restart a PostgreSQL server it did not start: " + RESTART_HINT
    return None


class StoreRestart:
    kills = False
    arity = 1
    groups: tuple[str, ...] = ("restarts",)
    follows = False
    copyable = False
    kept = False
    cuts = False

    def __init__(self, in_commit: bool = False) -> None:
        self.in_commit = in_commit
        self.name = "store-restart-commit" if in_commit else "store-restart"
        self.step = "committing" if in_commit else "writing"
        self.label = "store restart in commit" if in_commit else "store restart"
        self.where = (
            "inside checkpoint K's transaction, before COMMIT"
            if in_commit
            else "as checkpoint K is about to be written"
        )
        self.meaning = (
            f"the store server restarts {self.where}: the worker's connections die; "
            "nothing acknowledged may be lost, a fresh worker continues"
        )

    def points(self, base: Baseline) -> list[CrashPoint]:
        return [
            CrashPoint(self.name, k)
            for k in range(1, base.checkpoints + 1)
            if base.passed(gates.checkpoint_gate(k, self.step))
        ]

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        name = gates.checkpoint_gate(point.k, self.step)
        # A checkpoint written in several transactions: the last one's commit.
        found = [e for e in base.trace if gates.base_name(e) == name]
        if not found:
            raise PointError(f"killpoint: {point}: the baseline never passed {name}")
        gate = found[-1] if self.in_commit else name
        run, started = base.run_at(base.position(gate))
        return Plan(point, (gate,), frozenset({gate}), point.k - 1, run, started)

    def describe(self, point: CrashPoint) -> str:
        where = self.where.replace("K", str(point.k))
        return (
            f"the store server restarts {where} ({count(point.k - 1, 'checkpoint')} landed): the "
            "worker's connections die; it must finish correctly or fail without losing what "
            "it acknowledged, and a fresh worker continues"
        )

    def run(self, cell: CellContext, plan: Plan) -> None:
        problem = self.unavailable(cell.stores.kind)
        if problem is not None:
            cell.end(Finding("missed", problem))
        unsafe = cell.stores.unsafe_to_restart()  # type: ignore[attr-defined]
        if unsafe is not None:
            # Whatever the cell would find, the server's setting could explain it.
            cell.end(outage_finding("store-unavailable", unsafe, []))
        gate = next(iter(plan.wait_for))
        worker = cell.start("worker", gates=plan.arm, release=True)
        cell.reach(worker, plan)
        cell.fault("the store server restarts: every connection to it dies")
        life = cell.stores.restart(cell.url, RESTART_WAIT)  # type: ignore[attr-defined]
        # The engine's own connections to this store died too: new ones for what follows.
        per_url.release(cell.url)
        cell.event(f"the store server is up again (since {life})", "store", "store")
        worker.release(gate)
        ended = cell.join(worker, "the worker after the store restart")
        cell.event(f"the worker ended after the restart ({ended})")
        cell.after_crash(plan, [worker])

    def unavailable(self, store_kind: str) -> str | None:
        return restart_problem(store_kind)


__all__ = ["RESTART_ENV", "StoreRestart", "restart_problem"]
