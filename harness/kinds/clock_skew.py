"""Clocks that disagree (Jepsen's clock nemesis): a worker whose wall clock runs ahead of or
behind the others' by a chosen number of seconds.

  clock-behind:K:S   killed after checkpoint K; the resumer that takes the run has its
                     wall clock S seconds behind the others', and is held once its first
                     checkpoint has landed; a second resumer, on the true clock, is
                     released: the leases the owner stamped must still refuse it
  clock-ahead:K:S    the same, with the owner on the true clock and the second resumer's
                     clock S seconds ahead

A lease is a promise made on one clock and read on another: a runtime that stamps a lease
and one that reads it must agree on the time to within the lease's margin. The skew is set
inside the worker (killpoint.workers.clock: `time.time` and `time.time_ns`), so it acts on
runtimes that read the wall clock through them, the reference runtime among them, and not
on a clock read by `datetime.now()` or kept by a store server (docs/explanation/history.md). Judged as
`second-resumer` is (two drivers) and by the run's history (a lease stamped already expired
by the true clock is the skew's doing where the skewed worker stamped it, and allowed).
The plan offers one point per row, S = 20 (two thirds of the 30-second lease cells run
with, the margin the reference runtime's heartbeat keeps), for runtimes whose adapter
reports the leases it stamps.
"""

from __future__ import annotations

from killpoint.errors import PointError
from killpoint.judge.baseline import Baseline
from killpoint.kinds.base import CellContext, Plan, after_checkpoint
from killpoint.kinds.ownership import SecondResumer, owned_boundaries
from killpoint.values.durations import duration
from killpoint.values.points import CrashPoint

SKEW = 20  # seconds a planned point sets a clock off by


class ClockSkew:
    kills = True
    arity = 2
    follows = False
    copyable = True
    kept = False
    cuts = False
    sampled: int | None = None

    def __init__(self, ahead: bool) -> None:
        self.ahead = ahead
        self.name = "clock-ahead" if ahead else "clock-behind"
        whose = (
            "a second resumer's clock runs S seconds ahead"
            if ahead
            else "the resumer that owns the run runs S seconds behind"
        )
        self.meaning = (
            f"killed after checkpoint K; {whose} the others'; the second resumer must be "
            "refused while the owner is alive"
        )
        self.label = "clock ahead K:S" if ahead else "clock behind K:S"
        # Behind is the default plan's (one of the two is enough for a lease, which reads
        # only the difference); ahead, on request.
        self.groups: tuple[str, ...] = ("clocks",) if ahead else ("faults", "clocks", "all")

    def points(self, base: Baseline) -> list[CrashPoint]:
        if not base.stamps_leases():
            return []
        return [CrashPoint(self.name, k, SKEW) for k in owned_boundaries(base)[:1]]

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        if not point.i:
            raise PointError(f"killpoint: {point}: S counts the seconds of skew, from 1")
        found = after_checkpoint(base, CrashPoint(self.name, point.k))
        return Plan(
            point,
            found.arm,
            found.wait_for,
            found.checkpoints,
            found.run_index,
            found.run_started_at,
        )

    def describe(self, point: CrashPoint) -> str:
        whose = (
            f"a second resumer's clock runs {point.i} s ahead of the owner's"
            if self.ahead
            else f"the resumer that owns the run runs {point.i} s behind the others"
        )
        return (
            f"killed after checkpoint {point.k}; {whose}; the owner is held after its first "
            "checkpoint and the second resumer must be refused"
        )

    def run(self, cell: CellContext, plan: Plan) -> None:
        skew = float(plan.point.i or 0)
        owner = {} if self.ahead else {"clock_skew": -skew}
        second = {"clock_skew": skew} if self.ahead else {}

        def race(step: dict[str, object], held: int) -> None:
            cell.fault(
                f"the second resumer's clock runs {duration(skew)} ahead"
                if self.ahead
                else f"the owner's clock runs {duration(skew)} behind"
            )
            SecondResumer().race(cell, step, held, owner_spec=owner, second_spec=second)

        cell.after_crash(plan, cell.crash_at(plan), resume=race)

    def unavailable(self, store_kind: str) -> str | None:
        return None


__all__ = ["SKEW", "ClockSkew"]
