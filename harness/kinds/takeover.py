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

from killpoint.errors import PointError
from killpoint.judge.baseline import (
    Baseline,
    as_effects,
    durable_results,
    effects,
    message_batches,
)
from killpoint.judge.contract import acknowledged
from killpoint.judge.oracle import Sides
from killpoint.kinds.base import CellContext, Plan, after_checkpoint, boundaries_in_flight
from killpoint.scenarios import gates
from killpoint.scenarios.conversation import canonical_arguments
from killpoint.values.findings import Finding
from killpoint.values.points import CrashPoint
from killpoint.values.sentences import count

SIGSTOP_LEASE = 0.3  # seconds: short, so the takeover after a pause waits little
# Seconds the woken worker of `sigstop-writing` has to try its write while the takeover
# is held: one that lands or ends sooner is judged at once; one still running then (a
# fenced worker waiting for the owner) is judged again once the takeover has ended.
STALE_TRY = 5.0
# A woken worker still at it after this long has likely gone to wait for the owner, and
# may do so for the rest of STALE_TRY: the cell lends its slot for that rest. Most end
# within tens of milliseconds, without giving their slot up.
STALE_GRACE = 0.25
TAKEOVER = Sides("store after the takeover", "store after the stale worker woke")
# The cell's end against the baseline: the store the stale worker left, not a resumed run's.
WOKEN = Sides("baseline", "store after the stale worker woke")

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


def unfinished_at(base: Baseline, gate: str, paused: dict[str, Any] | None) -> Counter[Signature]:
    """`unfinished_batch` of the store at a pause at `gate`, or, when the store does not
    hold the batch in flight there yet (in "tool" mode its message lands with its first
    result), every call of that batch as the baseline ran it: all were dispatched, and
    none has a durable result."""
    batch = base.batch_at(base.position(gate))
    if batch is None or len(message_batches(paused)) >= batch.number:
        return unfinished_batch(paused)
    return Counter((c.tool, c.arguments) for c in batch.calls)


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
    cell.sleep_until(deadline)


class _Pause:
    kills = False
    arity = 1
    groups: tuple[str, ...] = ("faults", "all")
    follows = False
    copyable = False
    kept = False
    cuts = False
    sampled: int | None = None

    def unavailable(self, store_kind: str) -> str | None:
        return None

    def pause(
        self, cell: CellContext, plan: Plan
    ) -> tuple[Any, Counter[Signature], dict[str, Any] | None, Counter[Signature]]:
        """Start the worker, reach the point, pause it there; what it had done by then and
        the calls of its batch still unfinished (`unfinished_at`)."""
        gate = next(iter(plan.wait_for))
        stale = cell.start("worker", gates=plan.arm, release=True, lease_seconds=SIGSTOP_LEASE)
        cell.reach(stale, plan)
        cell.pause(stale)
        stale.release(gate)  # read once it is woken
        paused = cell.read()
        # One reading of the ledger for both: an effect that lands between two readings
        # (SIGSTOP is delivered asynchronously) would be in neither the bound nor `late`.
        at_pause = cell.ledger()
        cell.allow(cell.in_flight(paused, at_pause), "in flight at the pause")
        before = effects([e for e in at_pause if e.pid == stale.pid])
        return stale, before, paused, unfinished_at(cell.base, gate, paused)

    def expired(self, cell: CellContext, plan: Plan) -> tuple[int, dict[str, Any]] | None:
        """Wait out the paused worker's lease; what the store holds then and the step a
        takeover continues from, or None when the store holds the session finished: a
        runtime may make a run durably final before its last write (ADK writes
        `end_of_agent` after the final answer), and there is then no run to take over."""
        wait_for_lease(cell)
        held, session = cell.at_crash("when the lease expired")
        step = cell.next_step(plan, session)
        if step is None:
            cell.event(
                f"the store holds the session finished with {count(held, 'checkpoint')}: "
                "nothing is left to take over",
                "store",
                "store",
            )
        return None if step is None else (held, step)

    def nothing_left(self, cell: CellContext, plan: Plan, stale: Any) -> None:
        """No takeover: the paused worker is woken and finishes its own last writes, the
        only driver of a run that was already final; what it returns must be durable."""
        for gate in plan.arm:
            stale.release(gate)  # a release before the gate is reached lets it pass
        stale.cont()
        woke = stale.join(cell.deadline())
        if woke.kind == "timeout":
            cell.end(Finding("hung", "the woken worker did not end"))
        cell.fault(f"the woken worker ended: {woke.kind} {woke.detail}".strip())
        for f in acknowledged(stale.acks, cell.read(), who="the woken worker"):
            cell.add(f)

    def late_calls(
        self,
        cell: CellContext,
        stale: Any,
        before: Counter[Signature],
        paused: dict[str, Any] | None,
        unfinished: Counter[Signature],
    ) -> None:
        """Once the stale worker has ended (or is stopped for good), whatever ended the
        cell: its late calls of the unfinished batch may repeat once each."""
        if stale.alive:
            stale.kill()  # nothing more of it may land uncounted
        entries = cell.ledger()
        late = late_allowance(
            as_effects(unfinished, entries),
            started=before - durable_results(paused, entries),
            late=effects([e for e in entries if e.pid == stale.pid]) - before,
        )
        if late:
            cell.allow(
                late, "of its unfinished batch finished by the woken worker (dispatched before "
                "the pause; each may repeat once)",
            )  # fmt: skip

    def judge_stale(
        self,
        cell: CellContext,
        taken: tuple[dict[str, Any] | None, int],
        stale: Any,
        what: str,
    ) -> None:
        """What the stale worker wrote, from the store: the session and the checkpoint
        count against `taken` (the store as the takeover had it). A returned status says
        nothing of writes (a fenced worker may wait for the owner and return its result),
        but what it returned must be durable."""
        for f in self.stale_writes(cell, taken, stale, what):
            cell.add(f)

    def stale_writes(
        self,
        cell: CellContext,
        taken: tuple[dict[str, Any] | None, int],
        stale: Any,
        what: str,
    ) -> list[Finding]:
        """`judge_stale`'s findings, for a caller that decides what they are."""
        session, landed = cell.read(), cell.progress()
        found = [stale_write(f) for f in cell.compare_sides(taken[0], session, TAKEOVER)]
        if not found and landed != taken[1]:
            found.append(
                Finding(
                    "stale-write",
                    f"the store's checkpoint count went from {taken[1]} to {landed} {what}",
                    path="store",
                    expected_value=taken[1],
                    actual_value=landed,
                )
            )
        return found + acknowledged(stale.acks, session, who="the stale worker")


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
        stale, before, paused, unfinished = self.pause(cell, plan)
        try:
            expired = self.expired(cell, plan)
            if expired is not None:
                self.take_over(cell, stale, *expired)
            else:
                self.nothing_left(cell, plan, stale)
        finally:
            self.late_calls(cell, stale, before, paused, unfinished)
        cell.sides = WOKEN
        cell.compare()

    def take_over(self, cell: CellContext, stale: Any, held: int, step: dict[str, Any]) -> None:
        takeover = cell.start("resumer", checkpoint_offset=held, **step)
        ended = cell.join(takeover, "the takeover")
        if not ended.startswith("done"):
            cell.end(Finding("unresumable", f"the takeover failed: {ended}"))
        taken = cell.read(), cell.progress()
        stale.cont()
        woke = stale.join(cell.deadline())
        if woke.kind == "timeout":
            cell.end(Finding("hung", "the woken worker did not stop"))
        cell.fault(f"stale worker ended: {woke.kind} {woke.detail}".strip())
        self.judge_stale(cell, taken, stale, "after the stale worker woke")


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
        stale, before, paused, unfinished = self.pause(cell, plan)
        try:
            expired = self.expired(cell, plan)
            if expired is not None:
                self.take_over(cell, plan, stale, *expired)
            else:
                self.nothing_left(cell, plan, stale)
        finally:
            self.late_calls(cell, stale, before, paused, unfinished)
        cell.sides = WOKEN
        cell.compare()

    def take_over(
        self, cell: CellContext, plan: Plan, stale: Any, held: int, step: dict[str, Any]
    ) -> None:
        lapsed = cell.lease_deadline()
        hold = gates.checkpoint_gate(held + 1, "writing")
        # Its first write landing, or not: whether the store took the takeover's write
        # after the woken worker's (see `refused`).
        first = gates.checkpoint_gate(held + 1, "landed")
        takeover = cell.start(
            "resumer", checkpoint_offset=held, gates=(hold, first), release=True, **step
        )
        out = takeover.wait(frozenset({hold}), cell.deadline())
        if out.kind == "timeout":
            cell.end(Finding("hung", f"the takeover passed its time limit ({out.detail})"))
        if out.kind != "gates":
            cell.end(
                Finding(
                    "unresumable",
                    f"the takeover ended before its first checkpoint: {out.detail}",
                )
            )
        self.owned(cell, plan, lapsed)
        claimed = cell.read(), cell.progress()
        stale.cont()
        self.stale_attempt(cell, stale, plan.point.k)
        found = self.stale_writes(cell, claimed, stale, "while the takeover owned the run")
        # The takeover goes on whether or not the woken worker has stopped: a fenced
        # worker may wait for the owner, which must not wait for it in turn.
        takeover.release(hold)
        landed = takeover.wait(frozenset({first}), cell.deadline())
        if landed.kind == "gates":
            takeover.release(first)
        elif lapsed is None and landed.kind in ("error", "died") and found:
            # No run ownership, so the takeover held before its first write had claimed
            # nothing in the store; the woken worker's writes landed, and the store then
            # refused the takeover's (the later writer): one history, the woken worker's.
            self.woken_ends(cell, stale)
            cell.add(refused(plan.point.k, claimed[1], cell.progress(), landed.detail))
            return
        for f in found:
            cell.add(f)
        finished = cell.join(takeover, "the takeover")
        if not finished.startswith("done"):
            cell.end(Finding("unresumable", f"the takeover failed: {finished}"))
        if stale.alive:
            taken = cell.read(), cell.progress()
            ended = stale.join(cell.deadline())
            if ended.kind == "timeout":
                cell.end(Finding("hung", "the woken worker did not stop after the takeover ended"))
            self.judge_stale(cell, taken, stale, "after the takeover ended")
        ended = stale.finished
        cell.fault(
            "stale worker ended: "
            + (f"{ended.kind} {ended.detail}".strip() if ended else "still running")
        )

    def woken_ends(self, cell: CellContext, stale: Any) -> None:
        """The woken worker, the run's one driver once the store refused the takeover,
        finishes the run; what it returns must be durable."""
        ended = stale.join(cell.deadline())
        if ended.kind == "timeout":
            cell.end(Finding("hung", "the woken worker did not end after the takeover failed"))
        cell.fault(f"stale worker ended: {ended.kind} {ended.detail}".strip())
        for f in acknowledged(stale.acks, cell.read(), who="the woken worker"):
            cell.add(f)

    def owned(self, cell: CellContext, plan: Plan, lapsed: float | None) -> None:
        """The takeover is held at its next checkpoint; whether it owns the run is read from
        the store (a live lease), not assumed from where it is held (a runtime may claim
        with a write in the background). A runtime without ownership has nothing to read."""
        if lapsed is None:
            return

        def claimed() -> bool:
            deadline = cell.lease_deadline()
            return deadline is not None and deadline > time.time()

        if not cell.confirm(claimed):
            cell.end(
                Finding(
                    "missed",
                    f"at {plan.point} the takeover reached its next checkpoint, but the store "
                    "never showed it owning the run (no live lease), so no write of the "
                    "stale worker could be judged",
                )
            )
        cell.event("store confirms the takeover owns the run (a live lease)", "store", "store")

    def stale_attempt(self, cell: CellContext, stale: Any, k: int) -> None:
        """Give the woken worker a bounded time to try its write: its checkpoint lands
        (released at once, then judged from the store), it ends, or it goes on waiting."""
        landed = gates.checkpoint_gate(k, "landed")
        bound = min(cell.deadline(), time.monotonic() + STALE_TRY)
        woke = stale.wait(frozenset({landed}), min(bound, time.monotonic() + STALE_GRACE))
        if woke.kind == "timeout" and time.monotonic() < bound:
            with cell.lent():
                woke = stale.wait(frozenset({landed}), bound)
        if woke.kind == "gates":
            cell.fault(f"the stale worker's checkpoint {k} committed")
            stale.release(landed)
            woke = stale.wait(frozenset(), bound)
        if woke.kind == "timeout":
            cell.fault(
                "the woken worker has not stopped (waiting for the owner?); the takeover goes on"
            )


def refused(k: int, claimed: int, landed: int, detail: str) -> Finding:
    """Two drivers and an unresumable takeover, in a store that kept one history: what a
    runtime without run ownership but with an optimistic check on each write (ADK's
    StaleSessionError) does at `sigstop-writing`. Nothing was torn, so it is no
    stale write; the takeover, the recovery, failed."""
    return Finding.of(
        "takeover-refused",
        {"k": k, "woken": landed - claimed, "detail": detail},
        path="store",
        expected_value=claimed,
        actual_value=landed,
        sides=("checkpoints when the takeover was held", "checkpoints after it failed"),
    )


def stale_write(found: Finding) -> Finding:
    """A difference between the store after the takeover and after the stale worker woke:
    whatever field it is in, the stale worker wrote it. One cause, whatever the field: the
    finding is placed at the store (so it groups as one), the field is in its evidence."""
    return Finding.of(
        "stale-write",
        {"field": found.path, "inner": found.sentence},
        path="store",
        expected_value=found.expected_value,
        actual_value=found.actual_value,
        evidence=(f"field: {found.path}", *((f"tool: {found.tool}",) if found.tool else ())),
        sides=TAKEOVER.pair,
    )


__all__ = [
    "SIGSTOP_LEASE",
    "Sigstop",
    "SigstopWriting",
    "late_allowance",
    "refused",
    "unfinished_at",
    "unfinished_batch",
]
