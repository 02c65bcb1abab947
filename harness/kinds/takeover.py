"""Pause and takeover: a worker stops (SIGSTOP) holding a run, another takes the run over,
the first is woken. Whatever the stale worker tries, the store must keep the takeover's
state: its writes rejected, no checkpoint of it landing after the takeover.

  sigstop:K           paused after checkpoint K landed; woken once the takeover finished
                      the run (a fence before its next batch stops it, or its write
                      collides with what the takeover wrote)
  sigstop-writing:K   paused about to write checkpoint K; woken while the takeover is
                      still running (it has claimed the run and holds before its own next
                      checkpoint), so that only the store's ownership check can stop the
                      stale write
"""

from __future__ import annotations

import time
from collections import Counter
from typing import Any

from killpoint.judge.baseline import Baseline, durable_results, effects
from killpoint.judge.oracle import Sides
from killpoint.kinds.base import CellContext, Plan, after_checkpoint, boundaries_in_flight
from killpoint.scenarios import gates
from killpoint.scenarios.conversation import canonical_arguments
from killpoint.values.findings import Finding
from killpoint.values.points import CrashPoint, PointError

SIGSTOP_LEASE = 0.3  # seconds: short, so the takeover after a pause waits little
TAKEOVER = Sides("store after the takeover", "store after the stale worker woke")

Signature = tuple[str, str]


def unfinished_batch(session: dict[str, Any] | None) -> Counter[Signature]:
    """The calls of each run's newest tool batch that have no durable result, per (tool,
    canonical arguments): what a paused worker may still have running in its threads."""
    found: Counter[Signature] = Counter()
    for run in (session or {}).get("runs", {}).values():
        turns = [m for m in run["messages"] if m["role"] == "assistant"]
        if not turns or not turns[-1]["tool_calls"]:
            continue
        turn = len(turns)
        done = {(e["turn"], e["call_index"]) for e in run["tool_executions"]}
        for index, call in enumerate(turns[-1]["tool_calls"]):
            if (turn, index) not in done:
                found[(call["name"], canonical_arguments(call["arguments"]))] += 1
    return found


def late_allowance(
    unfinished: Counter[Signature], *, started: Counter[Signature], late: Counter[Signature]
) -> Counter[Signature]:
    """Which of a woken stale worker's effects after its pause (`late`) were calls of its
    unfinished batch that it had not started by then (`started`: its effects without a
    durable result at the pause). A tool call dispatched before the pause cannot be
    recalled, so each may repeat once, like a call in flight at a crash; anything else it
    ran after waking (a new batch: a missing fence) stays outside the bound."""
    return late & (unfinished - started)


def wait_for_lease(cell: CellContext) -> None:
    """Until the paused worker's lease has expired: the takeover is legal from then."""
    deadline = cell.lease_deadline()
    if deadline is None:
        return  # no run ownership: a takeover is possible at once
    cell.fault("waiting for the paused worker's lease to expire")
    while time.time() < deadline:
        # Waiting on the row's lease (a wall-clock time the store holds), not on a process.
        time.sleep(max(0.0, deadline - time.time()) + 0.001)


class _Pause:
    kills = False
    arity = 1
    groups: tuple[str, ...] = ("faults", "all")
    follows = False

    def unavailable(self, store_kind: str) -> str | None:
        return None

    def pause(
        self, cell: CellContext, plan: Plan
    ) -> tuple[Any, Counter[Signature], dict[str, Any] | None]:
        """Start the worker, reach the point, pause it there; what it had done by then."""
        gate = next(iter(plan.wait_for))
        stale = cell.start("worker", gates=plan.arm, release=True, lease_seconds=SIGSTOP_LEASE)
        cell.reach(stale, plan)
        stale.stop()
        stale.release(gate)  # read once it is woken
        paused = cell.read()
        # One reading of the ledger for both: an effect that lands between two readings
        # (SIGSTOP is delivered asynchronously) would be in neither the bound nor `late`.
        at_pause = cell.ledger()
        cell.allow(cell.in_flight(paused, at_pause), "in flight at the pause")
        before = effects([e for e in at_pause if e.pid == stale.pid])
        return stale, before, paused

    def expired(self, cell: CellContext, plan: Plan) -> tuple[int, dict[str, Any]]:
        """Wait out the paused worker's lease; what the store holds then and the step a
        takeover continues from."""
        wait_for_lease(cell)
        held, session = cell.at_crash("when the lease expired")
        step = cell.next_step(plan, session)
        if step is None:
            raise PointError(f"killpoint: {plan.point}: nothing was left to take over")
        return held, step

    def woken(
        self,
        cell: CellContext,
        stale: Any,
        before: Counter[Signature],
        paused: dict[str, Any] | None,
        ended: str,
    ) -> None:
        """After the stale worker ended: its late calls of the unfinished batch may repeat."""
        late = late_allowance(
            unfinished_batch(paused),
            started=before - durable_results(paused),
            late=effects([e for e in cell.ledger() if e.pid == stale.pid]) - before,
        )
        if late:
            cell.allow(
                late, "of its unfinished batch finished by the woken worker (dispatched before "
                "the pause; each may repeat once)",
            )  # fmt: skip
        cell.fault(f"stale worker ended: {ended}")


class Sigstop(_Pause):
    name = "sigstop"
    meaning = (
        "after checkpoint K the worker is paused (SIGSTOP), another takes the run over once "
        "the lease expires, then the first is woken: it must change nothing"
    )
    label = "SIGSTOP"

    def points(self, base: Baseline) -> list[CrashPoint]:
        return boundaries_in_flight(self.name, base)

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        return after_checkpoint(base, point)

    def describe(self, point: CrashPoint) -> str:
        return (
            f"after checkpoint {point.k} the worker is paused; another takes the run over "
            "and finishes it; then the first is woken and must change nothing"
        )

    def run(self, cell: CellContext, plan: Plan) -> None:
        stale, before, paused = self.pause(cell, plan)
        held, step = self.expired(cell, plan)
        takeover = cell.start("resumer", checkpoint_offset=held, **step)
        ended = cell.join(takeover, "the takeover")
        if not ended.startswith("done"):
            cell.end(Finding("unresumable", f"the takeover failed: {ended}"))
        taken = cell.read()
        stale.cont()
        woke = stale.join(cell.deadline())
        if woke.kind == "timeout":
            cell.end(Finding("hung", "the woken worker did not stop"))
        for f in cell.compare_sides(taken, cell.read(), TAKEOVER):
            cell.add(stale_write(f))
        if woke.kind == "done":
            cell.add(
                Finding(
                    "stale-write",
                    "the stale worker finished its run after the takeover (its writes were "
                    "not rejected)",
                    path="store",
                )
            )
        self.woken(cell, stale, before, paused, f"{woke.kind} {woke.detail}".strip())
        cell.compare()


class SigstopWriting(_Pause):
    name = "sigstop-writing"
    meaning = (
        "the worker is paused about to write checkpoint K; another takes the run over and is "
        "held before its next checkpoint; the first is woken: its write must be rejected"
    )
    label = "SIGSTOP writing"

    def points(self, base: Baseline) -> list[CrashPoint]:
        return [
            CrashPoint(self.name, k)
            for k in range(2, base.checkpoints + 1)
            if base.run_at(base.position(gates.checkpoint_gate(k, "writing")))[1] < k - 1
        ]

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        writing = gates.checkpoint_gate(point.k, "writing")
        run, started = base.run_at(base.position(writing))
        if started >= point.k - 1:
            raise PointError(
                f"killpoint: {point}: nothing of run {run + 1} is durable before checkpoint "
                f"{point.k}, so there is no run to take over there"
            )
        landed = gates.checkpoint_gate(point.k, "landed")
        return Plan(point, (writing, landed), frozenset({writing}), point.k - 1, run, started)

    def describe(self, point: CrashPoint) -> str:
        return (
            f"the worker is paused about to write checkpoint {point.k}; another takes the run "
            "over and is held before its next checkpoint; the first is woken: its write must "
            "be rejected"
        )

    def run(self, cell: CellContext, plan: Plan) -> None:
        stale, before, paused = self.pause(cell, plan)
        held, step = self.expired(cell, plan)
        # The takeover has claimed the run when it reaches its own next checkpoint.
        hold = gates.checkpoint_gate(held + 1, "writing")
        takeover = cell.start(
            "resumer", checkpoint_offset=held, gates=(hold,), release=True, **step
        )
        out = takeover.wait(frozenset({hold}), cell.deadline())
        if out.kind == "timeout":
            cell.end(Finding("hung", f"the takeover passed its time limit ({out.detail})"))
        if out.kind != "gates":
            cell.end(
                Finding(
                    "unresumable", f"the takeover ended before its first checkpoint: {out.detail}"
                )
            )
        claimed = cell.read()
        stale.cont()
        landed = gates.checkpoint_gate(plan.point.k, "landed")
        woke = stale.wait(frozenset({landed}), cell.deadline())
        if woke.kind == "gates":
            cell.add(
                Finding(
                    "stale-write",
                    f"the stale worker's checkpoint {plan.point.k} landed while another "
                    "worker owned the run",
                    path="store",
                )
            )
            stale.release(landed)
        ended = stale.join(cell.deadline())
        if ended.kind == "timeout":
            cell.end(Finding("hung", "the woken worker did not stop"))
        for f in cell.compare_sides(claimed, cell.read(), TAKEOVER):
            cell.add(stale_write(f))
        takeover.release(hold)
        finished = cell.join(takeover, "the takeover")
        if not finished.startswith("done"):
            cell.end(Finding("unresumable", f"the takeover failed: {finished}"))
        self.woken(cell, stale, before, paused, f"{ended.kind} {ended.detail}".strip())
        cell.compare()


def stale_write(found: Finding) -> Finding:
    """A difference between the store after the takeover and after the stale worker woke:
    whatever field it is in, the stale worker wrote it. One cause, whatever the field: the
    finding is placed at the store (so it groups as one), the field is in its evidence."""
    return Finding(
        "stale-write",
        f"the stale worker wrote after the takeover: {found.sentence}",
        path="store",
        expected_value=found.expected_value,
        actual_value=found.actual_value,
        evidence=(f"field: {found.path}", *((f"tool: {found.tool}",) if found.tool else ())),
    )


__all__ = ["SIGSTOP_LEASE", "Sigstop", "SigstopWriting", "late_allowance", "unfinished_batch"]
