"""Interleavings under control: the order a parallel batch's calls finish in, chosen by the
plan instead of the scheduler.

  finish-order:K:I   tool batch K's calls finish in order I (its rank among the batch's
                     orders, killpoint.values.orders: 0 is call order, the order every
                     other cell finishes them in); the run goes on, uninterrupted, and ends
                     as the baseline's must

Every worker finishes a batch's calls in call order unless told otherwise (each call, its
work done, waits until the calls before it have returned to the runtime:
killpoint.scenarios.finish_order), so a runtime whose outcome depends on the order (results
kept in completion order, a lock held over too narrow a stretch) passes or fails a cell the
same way every time, and a cell that fails replays. A batch of up to three calls offers
every other order; a larger one, orders drawn PCT-style, of which the plan keeps a few per
batch, chosen from the campaign's seed. A runtime that runs a batch's calls one at a time
cannot finish them in another order: the cell says so and judges the run as it went.
"""

from __future__ import annotations

from math import factorial

from killpoint.errors import PointError
from killpoint.judge.baseline import Baseline, Batch
from killpoint.judge.oracle import Sides
from killpoint.kinds.base import CellContext, Plan
from killpoint.values import orders
from killpoint.values.findings import Finding
from killpoint.values.points import CrashPoint
from killpoint.values.sentences import count

DRAWS = 16  # PCT draws a large batch offers (the plan keeps `sampled` of them)
REORDERED = Sides("baseline", "run with its calls reordered")


class FinishOrder:
    name = "finish-order"
    meaning = (
        "tool batch K's calls finish in order I (0 is call order) instead of the "
        "scheduler's; the run goes on, uninterrupted, and must end as the baseline's"
    )
    label = "finish order K:I"
    kills = False
    arity = 2
    groups: tuple[str, ...] = ("orders", "all")
    follows = False
    copyable = False
    kept = False
    cuts = False
    # At most this many orders of one batch per row, drawn from the seed: every order of a
    # batch of up to three calls (five besides call order); a few PCT draws of a larger one.
    sampled: int | None = 5

    def points(self, base: Baseline) -> list[CrashPoint]:
        return [
            CrashPoint(self.name, b.number, r)
            for b in base.batches
            for r in orders.offered(len(b.calls), f"{base.scenario}/{b.number}", DRAWS)
        ]

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        batch = self._batch(base, point)
        n = len(batch.calls)
        if point.i is None or not 0 <= point.i < factorial(n):
            raise PointError(
                f"killpoint: {point}: batch {point.k} has {count(n, 'call')}, so orders "
                f"0..{factorial(n) - 1}"
            )
        run, started = base.run_at(batch.first_index)
        order = orders.unrank(point.i, n)
        return Plan(point, (), frozenset(), base.checkpoints, run, started, notes=(str(order),))

    def _batch(self, base: Baseline, point: CrashPoint) -> Batch:
        batch = next((b for b in base.batches if b.number == point.k), None)
        if batch is None or len(batch.calls) < 2:
            shown = ", ".join(f"{b.number} ({count(len(b.calls), 'call')})" for b in base.batches)
            raise PointError(
                f"killpoint: {point} is not a batch of two calls or more in this baseline; "
                f"its batches: {shown or 'none'}"
            )
        return batch

    def describe(self, point: CrashPoint) -> str:
        return (
            f"tool batch {point.k}'s calls finish in order {point.i} (0 is call order) "
            "instead of the scheduler's; the run goes on uninterrupted"
        )

    def run(self, cell: CellContext, plan: Plan) -> None:
        k, rank = plan.point.k, plan.point.i or 0
        order = orders.unrank(rank, len(self._batch(cell.base, plan.point).calls))
        cell.fault(f"tool batch {k}'s calls finish in the order {list(order)} (call indices)")
        worker = cell.start("worker", finish_order=(k, order))
        ended = cell.join(worker, "the worker")
        if not ended.startswith("done"):
            cell.end(Finding("unresumable", f"the run failed with its calls reordered: {ended}"))
        kept = [e for e in cell.history() if e.event == "order" and e.get("batch") == k]
        if kept and not kept[-1].get("kept"):
            cell.event(
                f"batch {k}'s calls finished in the order {kept[-1].get('order')}: the runtime "
                "did not run them at once, so no other order can happen (judged as it went)"
            )
        cell.sides = REORDERED
        cell.compare()

    def unavailable(self, store_kind: str) -> str | None:
        return None


__all__ = ["FinishOrder"]
