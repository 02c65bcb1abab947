"""Ownership while the owner is alive: a worker holds the run, live, and a second worker
asks for it. Nothing is killed while the two overlap, so nothing is left to chance: the
second worker meets a live owner every time.

  lease-outlived:K    the worker is held inside tool batch K (its first call's effect
                      done, its result not back) for several lease periods, alive; a
                      second resumer is released: only a lease the owner kept renewing
                      stops it
  lease-renewed:K     the same hold inside batch K, after the owner was first held inside
                      the batch before it until its heartbeat had renewed the lease, then
                      wrote a checkpoint: a heartbeat whose renewals decay once the run
                      has moved on is caught here
  lease-resumed:K     killed after checkpoint K; the resumer is held inside its first
                      tool batch for several lease periods, alive; a second resumer is
                      released: the lease a resumed run keeps is held to it too
  second-resumer:K    killed after checkpoint K; a resumer continues the run and is held
                      once its first checkpoint has landed (it owns the run and has done
                      a batch); a second resumer is released: a live lease must refuse it
  continue-ended:K    run K has ended (COMPLETED or CANCELLED); one more continue_run of
                      it must be refused or change nothing: no effect, no model turn, the
                      store as it was

Who drove is read from what happened, never from a returned status: the ledger's tool
executions and the scripted model's requests, by process. A second worker that waits for
the owner and returns its result drives nothing, and passes.
"""

from __future__ import annotations

import time
from dataclasses import replace
from itertools import pairwise
from typing import TYPE_CHECKING, Any

from killpoint.errors import PointError
from killpoint.judge.baseline import Baseline
from killpoint.judge.oracle import Sides
from killpoint.kinds.base import CellContext, CellStore, Plan, after_checkpoint
from killpoint.kinds.kills import MidBatch
from killpoint.scenarios import gates
from killpoint.values.durations import duration
from killpoint.values.findings import Finding
from killpoint.values.points import CrashPoint
from killpoint.values.sentences import count, numbers

if TYPE_CHECKING:
    from killpoint.workers.processes import Worker

# The owner's lease in `lease-outlived`: short, so that holding it for HELD leases costs
# little; its heartbeat renews it every third of it, so a stall of a whole lease under
# load is what it takes to lose it.
LEASE = 0.5
HELD = 3  # lease periods the owner is held inside its tool
# How long the second resumer may take to be refused (or to drive) before the owner is
# released anyway: a runtime whose second caller waits for the owner never ends first.
REFUSAL = 5.0
# The cell's end against the baseline: the store both resumers left, not one resumed run's.
BOTH = Sides("baseline", "store after both resumers")
ENDED = Sides("store when the run had ended", "store after one more continue_run")


def drove(cell: CellStore, worker: Worker) -> tuple[list[str], list[int]]:
    """What `worker` did itself: the tools it started (ledger) and the model turns it
    asked for (the scripted model's log), in order."""
    tools = [e.tool for e in cell.ledger() if e.pid == worker.pid and e.phase == "started"]
    turns = [t for t, pid in cell.model_turns() if pid == worker.pid]
    return tools, turns


def at_once(cell: CellStore, one: Worker, other: Worker) -> str | None:
    """What shows that `one` and `other` drove the same stretch of the run, or None when
    at most one drove each stretch.

    Both did something is not enough: a run one resumer leaves PAUSED is released, and the
    other may answer the pause and take it up (any caller may continue a PAUSED run), so
    each drives in turn; so may a run one leaves ERROR (a model that failed past its
    retries). Two drivers show as a step both took (the same model turn answered, the
    same tool call run) or as acts that interleave: in the model's log or in the
    ledger one acts after the other has begun, then again, or the two logs disagree on
    which came first. A handover with neither repeats nothing and acts on nothing the
    other owns; a claim that ignores a live lease is held to `second-resumer`, where the
    owner is alive by construction."""
    pids = (one.pid, other.pid)
    turns = [(t, pid) for t, pid in cell.model_turns() if pid in pids]
    # A step taken is a turn answered: a request the model failed (a 500 past the SDK's
    # retries, which ends that driver's run ERROR for the other to continue) is not one.
    answered = [(t, pid) for t, pid in cell.model_turns(served=True) if pid in pids]
    calls = [
        ((e.tool, e.arguments, e.key), e.pid)
        for e in cell.ledger()
        if e.pid in pids and e.phase == "started"
    ]
    shared_turns = sorted(
        {t for t, p in answered if p == one.pid} & {t for t, p in answered if p != one.pid}
    )
    if shared_turns:
        return f"the model answered {numbers('turn', shared_turns)} to both"
    theirs = {c for c, pid in calls if pid == other.pid}
    shared_calls = [c for c, pid in calls if pid == one.pid and c in theirs]
    if shared_calls:
        tool, arguments, _ = shared_calls[0]
        return f"both ran {tool} {arguments}"
    firsts: set[int] = set()
    for log, acts in (("the model's log", turns), ("the ledger", calls)):
        order = [pid for _, pid in acts]
        switches = sum(1 for x, y in pairwise(order) if x != y)
        if switches > 1:
            return f"their acts interleave in {log}"
        if switches == 1:
            firsts.add(order[0])
    if len(firsts) > 1:
        return "the model's log and the ledger disagree on which drove first"
    return None


def did(tools: list[str], turns: list[int]) -> str:
    parts = []
    if tools:
        parts.append(f"ran {count(len(tools), 'tool call')} ({', '.join(dict.fromkeys(tools))})")
    if turns:
        parts.append(f"asked for model {numbers('turn', turns)}")
    return " and ".join(parts)


def second_resumer(
    cell: CellContext,
    owner: Worker,
    held_at: tuple[str, ...],
    step: dict[str, Any],
    held: int,
    **spec: Any,
) -> None:
    """The owner is parked at `held_at`, alive and owning the run: release a second
    resumer, give it time to be refused, let the owner go on, and say who drove."""
    rests = resting(cell.read())
    second = cell.start("second-resumer", checkpoint_offset=held, **step, **spec)
    out = second.wait(frozenset(), min(cell.deadline(), time.monotonic() + REFUSAL))
    if out.kind == "timeout":
        cell.fault("the second resumer has not ended (waiting for the owner?); the owner goes on")
    else:
        cell.fault(f"the second resumer ended while the owner was held: {out.kind} {out.detail}")
    for gate in held_at:
        owner.release(gate)
    ended = cell.join(owner, "the owner")
    cell.join(second, "the second resumer")
    tools, turns = drove(cell, second)
    if rests is not None:
        # The owner's checkpoint ended its drive (a run PAUSED for a confirmation releases
        # its lease): the second continued a resting run, as any worker may, and the owner,
        # woken, found it continued. What the store holds is compared all the same.
        cell.event(
            f"the owner's checkpoint {held + 1} left the run {rests}, resting and released: "
            "a second resumer may continue it, so there was nothing to refuse",
            "store",
            "store",
        )
        return
    if tools or turns:
        cell.add(
            Finding(
                "two-drivers",
                f"a second resumer took the run while its owner (pid {owner.pid}) was alive "
                f"and held it: the second {did(tools, turns)}",
                path="runs",
                evidence=(f"second resumer: pid {second.pid}", f"owner ended: {ended}"),
            )
        )
    elif not ended.startswith("done"):
        cell.end(Finding("unresumable", f"the owner failed after it was held: {ended}"))


def resting(session: dict[str, Any] | None) -> str | None:
    """The status of the session's last run when it rests, PAUSED or ERROR: its worker has
    let it go and it is anyone's to continue (as owned_boundaries has it). None otherwise:
    a run in flight is its owner's, and one that has ended must not be driven at all."""
    runs = list(((session or {}).get("runs") or {}).values())  # in the order they started
    status = runs[-1].get("status") if runs and isinstance(runs[-1], dict) else None
    return status if status in ("PAUSED", "ERROR") else None


def after_a_batch(base: Baseline, landed: str) -> bool:
    """Whether the checkpoint that lands at `landed` was written right after a tool call
    finished (mid-run, the run still owned), not after a model turn (a run that ends,
    or rests PAUSED or ERROR, releases it)."""
    before = [e for e in base.trace[: base.position(landed)] if not e.startswith("checkpoint:")]
    gate = gates.parse(before[-1]) if before else None
    return gate is not None and gate.kind == "tool" and gate.phase == "finished"


class LeaseOutlived:
    name = "lease-outlived"
    meaning = (
        "the worker is held inside tool batch K for several lease periods, alive; a second "
        "resumer is released: it must be refused, and the owner finishes the run"
    )
    label = "lease outlived"
    kills = False
    arity = 1
    groups: tuple[str, ...] = ("faults", "all")
    follows = False
    copyable = False
    kept = False
    cuts = False
    sampled: int | None = None

    def points(self, base: Baseline) -> list[CrashPoint]:
        """The first batch of a run that has a durable checkpoint before it (a row to
        claim): one point per row, since any batch shows a lease that is not renewed."""
        for batch in base.batches:
            run_started = base.run_at(batch.first_index)[1]
            if batch.calls and base.landed_before(batch.first_index) > run_started:
                return [CrashPoint(self.name, batch.number)]
        return []

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        # Held where mid-batch:K:0 kills: call 0's effect done, the later calls not started.
        return replace(MidBatch().plan(base, CrashPoint("mid-batch", point.k, 0)), point=point)

    def describe(self, point: CrashPoint) -> str:
        return (
            f"the worker is held inside tool batch {point.k} for {HELD} lease periods "
            f"({duration(HELD * LEASE)}), alive; a second resumer is released: it must be refused"
        )

    def run(self, cell: CellContext, plan: Plan) -> None:
        owner = cell.start("worker", gates=plan.arm, release=True, lease_seconds=LEASE)
        cell.reach(owner, plan)
        outlive(cell, owner, plan)
        cell.compare()

    def unavailable(self, store_kind: str) -> str | None:
        return None


def outlive(cell: CellContext, owner: Worker, plan: Plan) -> None:
    """The owner is parked at the plan's gates: keep it there for HELD leases, then release
    a second resumer (the fault is time itself: the owner must keep its lease meanwhile)."""
    # The lease written with the last checkpoint; held HELD leases past when it was
    # written, the owner has had to renew it HELD times over to keep the run.
    lease = cell.lease_deadline()
    until = (lease if lease is not None else time.time() + LEASE) + (HELD - 1) * LEASE
    cell.fault(f"the worker is held inside its tool for {HELD} lease periods, alive")
    cell.sleep_until(until)
    held, session = cell.at_crash(f"{HELD} lease periods into the tool")
    step = cell.next_step(plan, session)
    if step is None:
        raise PointError(f"killpoint: {plan.point}: the run was over while its tool ran")
    second_resumer(cell, owner, plan.arm, step, held, lease_seconds=LEASE)
    cell.sides = BOTH


def held_inside(base: Baseline, number: int, point: CrashPoint) -> Plan:
    """Where mid-batch:K:0 kills (call 0's effect done, the later calls not started), as
    the plan of `point`."""
    return replace(MidBatch().plan(base, CrashPoint(MidBatch.name, number, 0)), point=point)


class LeaseRenewed:
    name = "lease-renewed"
    meaning = (
        "the worker is held inside the batch before K until its heartbeat renews the lease, "
        "runs on, then is held inside tool batch K for several lease periods; a second "
        "resumer is released: it must be refused"
    )
    label = "lease renewed"
    kills = False
    arity = 1
    groups: tuple[str, ...] = ("faults", "all")
    follows = False
    copyable = False
    kept = False
    cuts = False
    sampled: int | None = None

    def points(self, base: Baseline) -> list[CrashPoint]:
        """The second of two batches of one run, each with a durable checkpoint before it
        and one landing between them (the run's version moves on after the renewal): one
        point per row."""
        first = self._first_of_pair(base)
        return [] if first is None else [CrashPoint(self.name, first[1].number)]

    @staticmethod
    def _first_of_pair(base: Baseline) -> tuple[Any, Any] | None:
        held = [
            b
            for b in base.batches
            if b.calls and base.landed_before(b.first_index) > base.run_at(b.first_index)[1]
        ]
        for before, after in pairwise(held):
            same_run = base.run_at(before.first_index)[0] == base.run_at(after.first_index)[0]
            moved = base.landed_before(after.first_index) > base.landed_before(before.first_index)
            if same_run and moved:
                return before, after
        return None

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        pair = self._first_of_pair(base)
        if pair is None or pair[1].number != point.k:
            raise PointError(
                f"killpoint: {point}: batch {point.k} is not the second of two batches of one "
                "run with a checkpoint between them in this baseline"
            )
        return held_inside(base, point.k, point)

    def describe(self, point: CrashPoint) -> str:
        return (
            f"the worker is held inside the batch before {point.k} until its heartbeat has "
            f"renewed the lease, then inside tool batch {point.k} for {HELD} lease periods "
            f"({duration(HELD * LEASE)}), alive; a second resumer is released: it must be refused"
        )

    def run(self, cell: CellContext, plan: Plan) -> None:
        pair = self._first_of_pair(cell.base)
        assert pair is not None  # plan() checked it
        first = held_inside(cell.base, pair[0].number, plan.point)
        owner = cell.start(
            "worker", gates=(*first.arm, *plan.arm), release=True, lease_seconds=LEASE
        )
        cell.reach(owner, first)
        stamped = cell.lease_deadline() or 0.0
        if cell.confirm(lambda: (cell.lease_deadline() or 0.0) > stamped):
            cell.event(f"the owner's heartbeat renewed its lease inside batch {pair[0].number}")
        else:
            cell.event(f"the owner renewed no lease inside batch {pair[0].number}")
        for gate in first.arm:
            owner.release(gate)
        cell.reach(owner, plan)
        outlive(cell, owner, plan)
        cell.compare()

    def unavailable(self, store_kind: str) -> str | None:
        return None


def resumed_hold(base: Baseline, k: int) -> tuple[tuple[str, ...], frozenset[str]] | None:
    """The gates that hold a worker resumed after checkpoint `k` inside its first tool batch
    (call 0's effect done, the later calls not started), named as that worker passes them
    (a gate's `#n` counts its passes in one process); None when the run's next step after
    checkpoint `k` is not a model turn followed by a batch (nothing to hold a resumer in)."""
    landed = base.position(gates.checkpoint_gate(k, "landed"))
    after = [e for e in base.trace[landed + 1 :] if not e.startswith("checkpoint:")]
    step = gates.parse(after[0]) if after else None
    if step is None or step.kind != "model":
        return None
    batch = next((b for b in base.batches if b.first_index > landed and b.calls), None)
    if batch is None or base.run_at(batch.first_index)[0] != base.run_at(landed)[0]:
        return None
    plan = MidBatch().plan(base, CrashPoint(MidBatch.name, batch.number, 0))

    def renamed(name: str) -> str:
        base_name = gates.base_name(name)
        passes = sum(
            1
            for e in base.trace[landed + 1 : base.position(name) + 1]
            if gates.base_name(e) == base_name
        )
        return base_name if passes <= 1 else f"{base_name}#{passes}"

    return tuple(renamed(g) for g in plan.arm), frozenset(renamed(g) for g in plan.wait_for)


class LeaseResumed:
    name = "lease-resumed"
    meaning = (
        "killed after checkpoint K; the resumer is held inside its first tool batch for "
        "several lease periods, alive; a second resumer is released: it must be refused"
    )
    label = "lease resumed"
    kills = True
    arity = 1
    groups: tuple[str, ...] = ("faults", "all")
    follows = False
    copyable = True
    kept = False
    cuts = False
    sampled: int | None = None

    def points(self, base: Baseline) -> list[CrashPoint]:
        """The first boundary after which the run asks the model, then runs a batch: one
        point per row."""
        for k in range(1, base.checkpoints):
            if base.in_flight_after(k) and resumed_hold(base, k) is not None:
                return [CrashPoint(self.name, k)]
        return []

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        if 1 <= point.k < base.checkpoints and resumed_hold(base, point.k) is None:
            raise PointError(
                f"killpoint: {point}: after checkpoint {point.k} the run does not go on to a "
                "model turn and a tool batch in this baseline"
            )
        return after_checkpoint(base, point)

    def describe(self, point: CrashPoint) -> str:
        return (
            f"killed after checkpoint {point.k}; the resumer is held inside its first tool "
            f"batch for {HELD} lease periods ({duration(HELD * LEASE)}), alive; a second resumer "
            "is released: it must be refused"
        )

    def run(self, cell: CellContext, plan: Plan) -> None:
        cell.after_crash(
            plan,
            cell.crash_at(plan),
            resume=lambda step, held: self.hold(cell, plan, step, held),
        )

    def hold(self, cell: CellContext, plan: Plan, step: dict[str, Any], held: int) -> None:
        hold = resumed_hold(cell.base, plan.point.k)
        assert hold is not None  # plan() checked it
        arm, wait_for = hold
        owner = cell.start(
            "resumer",
            gates=arm,
            release=True,
            checkpoint_offset=held,
            lease_seconds=LEASE,
            **step,
        )
        out = owner.wait(wait_for, cell.deadline())
        if out.kind == "timeout":
            owner.kill()
            cell.end(Finding("hung", f"the resumer passed its time limit ({out.detail})"))
        if out.kind != "gates":
            cell.end(
                Finding(
                    "unresumable",
                    f"the resumer ended before its first tool batch: {out.kind} {out.detail}",
                )
            )
        lease = cell.lease_deadline()
        until = (lease if lease is not None else time.time() + LEASE) + (HELD - 1) * LEASE
        cell.fault(f"the resumer is held inside its first tool for {HELD} lease periods, alive")
        cell.sleep_until(until)
        second_resumer(cell, owner, arm, step, held, lease_seconds=LEASE)
        cell.sides = BOTH  # compared once this returns

    def unavailable(self, store_kind: str) -> str | None:
        return None


def owned_boundaries(base: Baseline) -> list[int]:
    """The boundaries after which the run's next checkpoint is one it writes mid-run,
    after a tool batch (a resumer owns the run there; a run that rests PAUSED or ERROR is
    anyone's to continue)."""
    found = []
    for k in range(1, base.checkpoints):
        if not base.in_flight_after(k):
            continue
        here = base.run_at(base.position(gates.checkpoint_gate(k, "landed")))
        after = gates.checkpoint_gate(k + 1, "landed")
        if here == base.run_at(base.position(after)) and after_a_batch(base, after):
            found.append(k)
    return found


class SecondResumer:
    name = "second-resumer"
    meaning = (
        "killed after checkpoint K; a resumer continues and is held after its first "
        "checkpoint; a second resumer is released: it must be refused"
    )
    label = "second resumer"
    kills = True
    arity = 1
    groups: tuple[str, ...] = ("faults", "all")
    follows = False
    copyable = True
    kept = False
    cuts = False
    # Every owned boundary of every run, a few of them where the row is long.
    sampled: int | None = 3

    def points(self, base: Baseline) -> list[CrashPoint]:
        """Every boundary of every run after which the run's next checkpoint is one it
        writes mid-run, after a tool batch (owned_boundaries)."""
        return [CrashPoint(self.name, k) for k in owned_boundaries(base)]

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        return after_checkpoint(base, point)

    def describe(self, point: CrashPoint) -> str:
        return (
            f"killed after checkpoint {point.k}; a resumer continues the run and is held "
            f"once checkpoint {point.k + 1} has landed; a second resumer must be refused"
        )

    def run(self, cell: CellContext, plan: Plan) -> None:
        cell.after_crash(
            plan, cell.crash_at(plan), resume=lambda step, held: self.race(cell, step, held)
        )

    def race(
        self,
        cell: CellContext,
        step: dict[str, Any],
        held: int,
        owner_spec: dict[str, Any] | None = None,
        second_spec: dict[str, Any] | None = None,
    ) -> None:
        """A resumer takes the run and is held once its first checkpoint has landed; a
        second resumer (`second_spec`: its worker's spec, a clock set off say) is released.
        `owner_spec`: the first resumer's."""
        landed = gates.checkpoint_gate(held + 1, "landed")
        owner = cell.start(
            "resumer",
            gates=(landed,),
            release=True,
            checkpoint_offset=held,
            **step,
            **(owner_spec or {}),
        )
        out = owner.wait(frozenset({landed}), cell.deadline())
        if out.kind == "timeout":
            cell.end(Finding("hung", f"the resumer passed its time limit ({out.detail})"))
        if out.kind != "gates":
            cell.end(
                Finding(
                    "unresumable",
                    f"the resumer ended before its first checkpoint: {out.kind} {out.detail}",
                )
            )
        cell.fault(f"the resumer owns the run: its checkpoint {held + 1} has landed")
        second_resumer(cell, owner, (landed,), step, held, **(second_spec or {}))
        cell.sides = BOTH  # compared once this returns

    def unavailable(self, store_kind: str) -> str | None:
        return None


class ContinueEnded:
    name = "continue-ended"
    meaning = (
        "run K has ended (COMPLETED or CANCELLED); one more continue_run of it must be "
        "refused or change nothing"
    )
    label = "continue ended"
    kills = False
    arity = 1
    groups: tuple[str, ...] = ("faults", "all")
    follows = False
    copyable = False
    kept = False
    cuts = False
    sampled: int | None = None

    def points(self, base: Baseline) -> list[CrashPoint]:
        """The session's last run, when it ends in a status that does not continue."""
        runs = list((base.session or {}).get("runs", {}).values())
        if runs and runs[-1]["status"] in ("COMPLETED", "CANCELLED"):
            return [CrashPoint(self.name, len(runs))]
        return []

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        runs = list((base.session or {}).get("runs", {}).values())
        if not 1 <= point.k <= len(runs) or runs[point.k - 1]["status"] not in (
            "COMPLETED",
            "CANCELLED",
        ):
            raise PointError(
                f"killpoint: {point}: run {point.k} of this baseline does not end COMPLETED "
                f"or CANCELLED (it has {count(len(runs), 'run')})"
            )
        started = base.run_at(base.position(gates.run_gate(point.k, "start")) + 1)[1]
        return Plan(point, (), frozenset(), base.checkpoints, point.k - 1, started)

    def describe(self, point: CrashPoint) -> str:
        return (
            f"run {point.k} has ended; one more continue_run of it must be refused or change "
            "nothing (no effect, no model turn, the store as it was)"
        )

    def run(self, cell: CellContext, plan: Plan) -> None:
        first = cell.start("worker")
        ended = cell.join(first, "the uninterrupted run")
        if not ended.startswith("done"):
            cell.end(Finding("unresumable", f"the run failed before it ended: {ended}"))
        _, before = cell.at_crash("when the run had ended")
        again = cell.start("resumer", resume_at=plan.run_index)
        out = cell.join(again, "the extra continue_run")
        cell.fault(f"continue_run of the ended run: {out}")
        changed = cell.compare_sides(before, cell.read(), ENDED)
        tools, turns = drove(cell, again)
        if changed or tools or turns:
            what = [did(tools, turns)] if tools or turns else []
            if changed:
                what.append(f"changed the store ({', '.join(f.path for f in changed[:3])})")
            cell.add(
                Finding(
                    "ended-run-continued",
                    f"run {plan.point.k} had ended, yet one more continue_run "
                    + ", and ".join(what),
                    path=f"runs[{plan.run_index}]",
                    evidence=tuple(f"{f.path}: {f.sentence}" for f in changed),
                )
            )
        cell.compare()

    def unavailable(self, store_kind: str) -> str | None:
        return None


__all__ = [
    "ContinueEnded",
    "LeaseOutlived",
    "LeaseRenewed",
    "LeaseResumed",
    "SecondResumer",
    "at_once",
    "drove",
    "owned_boundaries",
]
