"""Store faults: the store itself misbehaves at a point of the run.

lock-held:K   another connection holds the store's write lock when checkpoint K is
              written: the worker's write must fail (it waits LOCK_WAIT), leave nothing
              half-written, and a fresh worker continues once the lock is gone
"""

from __future__ import annotations

from killpoint.judge.baseline import Baseline
from killpoint.kinds.base import CellContext, Plan
from killpoint.scenarios import gates
from killpoint.values.points import CrashPoint

LOCK_WAIT = 0.1  # seconds a worker waits for a held write lock before its write fails


class LockHeld:
    name = "lock-held"
    meaning = (
        "another connection holds the store's write lock when checkpoint K is written: the "
        "write fails, nothing is half-written, a fresh worker continues"
    )
    label = "lock held"
    kills = False
    arity = 1
    groups: tuple[str, ...] = ("faults", "all")
    follows = False
    copyable = False
    kept = False
    cuts = False

    def points(self, base: Baseline) -> list[CrashPoint]:
        return [CrashPoint(self.name, k) for k in range(1, base.checkpoints + 1)]

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        gate = gates.checkpoint_gate(point.k, "writing")
        run, started = base.run_at(base.position(gate))
        return Plan(point, (gate,), frozenset({gate}), point.k - 1, run, started)

    def describe(self, point: CrashPoint) -> str:
        return (
            f"another connection holds the store's write lock when checkpoint {point.k} is "
            f"written ({point.k - 1} landed): the write must fail and leave nothing "
            "half-written; a fresh worker continues"
        )

    def run(self, cell: CellContext, plan: Plan) -> None:
        gate = next(iter(plan.wait_for))
        # The adapter must honour the URL's lock timeout (SQLite `?timeout=`, PostgreSQL
        # `lock_timeout`): the worker gives up instead of waiting out the cell's limit.
        impatient = cell.stores.with_lock_timeout(cell.url, LOCK_WAIT)
        worker = cell.start("worker", gates=plan.arm, release=True, store_url=impatient)
        cell.reach(worker, plan)
        release = cell.stores.hold_write_lock(cell.url, cell.base.tables)
        cell.fault("another connection holds the store's write lock")
        try:
            worker.release(gate)
            # The worker ends on its own: its write gives up after LOCK_WAIT.
            ended = cell.join(worker, "the worker meeting the held lock")
        finally:
            release()
        cell.event(f"write lock released; the worker ended ({ended})")
        cell.after_crash(plan, [worker])

    def unavailable(self, store_kind: str) -> str | None:
        return None


__all__ = ["LOCK_WAIT", "LockHeld"]
