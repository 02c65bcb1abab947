"""What a crash-point kind is: the PointKind Protocol, the Plan it makes from a baseline, and
the narrow cell context it runs a cell through.

A kind is one module's worth of meaning: its name and the line that says what it does,
whether the worker dies there, which points a baseline offers, how one point is reached
and confirmed (its Plan), and what happens around it (`run`), through a cell context of
three parts (its evidence, its store, its workers) and the cell's steps around a crash. The registry
(killpoint.kinds) lists the kinds; the planner, the engine, `--points` and the report's
columns all read it, so a new kind is one new module.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from killpoint.values import sentences

if TYPE_CHECKING:
    from killpoint.judge.baseline import Baseline, Call
    from killpoint.judge.oracle import Sides
    from killpoint.scenarios.history import Event as HistoryEvent
    from killpoint.scenarios.ledger import Entry
    from killpoint.stores import StoreBackend
    from killpoint.values.findings import Finding
    from killpoint.values.points import CrashPoint
    from killpoint.workers.processes import Worker


@dataclass(frozen=True)
class Plan:
    """How to reach one crash point, and what must hold there."""

    point: CrashPoint
    arm: tuple[str, ...]  # gates the worker arms
    wait_for: frozenset[str]  # gates that must be announced before the point is confirmed
    checkpoints: int  # checkpoints of the session in the store at the point
    run_index: int  # 0-based: the run in flight
    run_started_at: int  # checkpoints of the session when that run started
    finished_first: tuple[Call, ...] = ()  # calls whose effects must be done before the kill
    notes: tuple[str, ...] = field(default=(), compare=False)
    # The point as this baseline has it, where the kind's own description says too little
    # (a checkpoint committed in several transactions): the cell's plan line.
    detail: str = field(default="", compare=False)

    @property
    def expects_loss(self) -> bool:
        """Nothing of the run in flight was durable yet: losing it breaks no promise."""
        return self.checkpoints == self.run_started_at


class Crashed(Protocol):
    """What a crash left of a worker: what it had acknowledged (a killed Worker, or the
    traced worker's Copy that stands for one)."""

    @property
    def acks(self) -> list[dict[str, Any]]: ...


class CellEvidence(Protocol):
    """What a kind says of its cell: what happened (the timeline), what it found, what may
    repeat, and the finding that ends the cell. Methods that end the cell (a point not
    reached, a worker that hangs) record their finding and raise; a kind writes its steps
    in order and never checks for that."""

    base: Baseline
    sides: Sides  # what the cell's end is compared as: "baseline" / "resumed run" unless set
    # The cell's clock zero on the wall clock (time.time()): the ledger's times are shown
    # on the cell's one clock, the timeline's.
    wall0: float

    @property
    def cell_id(self) -> str:
        """The cell's id (RUNTIME/SCENARIO/MODE/STORE/SCHEDULE)."""
        ...

    @property
    def cut(self) -> str:
        """The campaign's cut model for power-loss points (`--cut`: synced, torn-op, ...)."""
        ...

    def event(self, text: str, kind: str = "other", lane: str = "harness") -> None: ...

    def fault(self, text: str) -> None: ...

    def add(self, finding: Finding) -> None: ...

    def evidence(self, name: str, value: dict[str, Any]) -> None:
        """Evidence of the kind's own, kept with the store at the crash (`name`: value)."""
        ...

    def end(self, finding: Finding) -> None:
        """Record the finding and end the cell here."""
        ...

    def allow(self, signatures: Any, why: str) -> None:
        """Allow each call (a Counter of (tool, arguments)) to repeat once more."""
        ...

    def compare_sides(self, expected: Any, actual: Any, sides: Sides) -> list[Finding]:
        """Every way `actual` differs from `expected` (two readings of the store)."""
        ...


class CellStore(Protocol):
    """What a kind reads of the cell's store and files (killpoint.engine.cell_store): each
    read within the cell's time limit."""

    url: str

    @property
    def stores(self) -> StoreBackend: ...

    def read(self) -> dict[str, Any] | None: ...

    def progress(self) -> int: ...

    def ledger(self) -> list[Entry]: ...

    def lease_deadline(self) -> float | None: ...

    def confirm(self, predicate: Callable[[], bool]) -> bool:
        """Poll the store until `predicate` holds (True) or the confirmation time passes."""
        ...

    def model_turns(self, served: bool = False) -> list[tuple[int, int]]:
        """(model turn, pid) of every request the scripted model got in this cell, from
        any worker; `served`: of every reply it answered."""
        ...

    def history(self) -> list[HistoryEvent]:
        """The cell's history so far, every worker's events in order (scenarios.history)."""
        ...

    def regenerated(self) -> list[dict[str, Any]]:
        """Each re-asked turn the scripted model answered otherwise in this cell
        (scenarios.model.regenerated_turns)."""
        ...

    def at_crash(self, when: str) -> tuple[int, dict[str, Any] | None]:
        """The store now (checkpoints landed, the session), kept as the cell's evidence."""
        ...

    def in_flight(self, session: dict[str, Any] | None, entries: Any = None) -> Any:
        """Calls whose effect happened but whose result is not durable (not yet allowed)."""
        ...

    def next_step(self, plan: Plan, session: dict[str, Any] | None) -> dict[str, Any] | None:
        """What a fresh worker must do after the crash (`resume_at` / `start_at` for the
        worker spec), or None when the session is finished; ends the cell when the run is
        gone."""
        ...


class CellWorkers(Protocol):
    """What a kind does with the cell's workers (killpoint.engine.cell_workers)."""

    def start(self, log_name: str, **spec: Any) -> Worker:
        """A worker of this cell (WorkerSpec fields as keywords: gates, release, ...)."""
        ...

    def reach(self, worker: Worker, plan: Plan) -> None:
        """Wait for the worker to announce the plan's gates, then confirm the point in the
        store (the plan's checkpoints landed, the next did not)."""
        ...

    def pause(self, worker: Worker) -> None:
        """SIGSTOP a worker held at its gate, between two of its transactions."""
        ...

    def kill(self, worker: Worker) -> None:
        """SIGKILL the worker's process tree, reap it, count the calls in flight."""
        ...

    def join(self, worker: Worker, what: str) -> str:
        """Wait for the worker to end; its outcome kind ("done", "error", "died"). A worker
        past its time limit ends the cell as `hung` (`what` names it)."""
        ...

    def deadline(self) -> float: ...

    def sleep_until(self, when: float) -> None:
        """Until time.time() reaches `when` (a lease the store holds running out), letting
        another cell work meanwhile."""
        ...

    def lent(self) -> AbstractContextManager[None]:
        """The cell's slot lent to another cell for the block: a wait on a worker that
        may well last its whole bound (its slot taken back after)."""
        ...

    def resume_gate(self, step: dict[str, Any]) -> str:
        """The gate a fresh worker passes as it takes the run up (`run:I:resume|start`)."""
        ...


class CellContext(CellEvidence, CellStore, CellWorkers, Protocol):
    """What a kind may do with the cell it runs (killpoint.engine.cell_run.CellRun): the
    three parts above, and the cell's own steps around a crash."""

    def crash_at(self, plan: Plan) -> Sequence[Crashed]:
        """The cell's first crash: start a worker armed at the plan's gates, reach the
        point, SIGKILL it; what crashed (for after_crash). A cell given a traced worker's
        copy of the state there (killpoint.engine.row_trace) starts nothing: the copy is
        what the kill would have left. A kind whose cell begins this way, and needs no
        live process before the kill, says so (PointKind.copyable)."""
        ...

    def after_crash(
        self,
        plan: Plan,
        crashed: Sequence[Crashed],
        resume: Callable[[dict[str, Any], int], None] | None = None,
    ) -> None:
        """Inspect the store, check what the crashed workers acknowledged, continue the
        run (with `resume(step, checkpoints held)` when given, else one fresh worker, or a
        crash of it when the schedule has more) and compare with the baseline."""
        ...

    def compare(self) -> None:
        """The session and the ledger against the baseline, and the contract."""
        ...


class PointKind(Protocol):
    """One kind of crash point (a column family of the matrix), and what the engine, the
    corpus and the planner need to know of it: read from the kind, never from a list of
    kind names elsewhere."""

    name: str
    meaning: str  # one line, "K" and "I" standing for the point's numbers
    label: str  # short, for column headers
    kills: bool  # the worker is SIGKILLed at the point
    arity: int  # numbers after the name: 1 (K) or 2 (K:I)

    @property
    def groups(self) -> tuple[str, ...]:
        """The --points groups that include it (where it can run, every kind is in "all"
        unless it needs to be asked for: a filesystem per cell, a server restart)."""
        ...

    follows: bool  # may be the later crash of a depth-2 schedule (in the resumed run)
    # Its cell begins with CellContext.crash_at (a worker armed at the point, reached and
    # SIGKILLed) and nothing before the kill needs a live process, so all that survives
    # the kill is in files: a row's traced worker's copy of them stands for the kill
    # (killpoint.engine.row_trace, `--kills fast`). Not a point where a process must live
    # on (a SIGSTOPped worker woken later, a lock or a restart under a worker, a model
    # fault), nor a power cut (what was synced, not what was written).
    copyable: bool
    # A crash-state corpus keeps the state its kill leaves (killpoint.corpus.record): one
    # crash, the state a deploy leaves; not a pause, a lock or a power cut.
    kept: bool
    # The power goes at the point: the campaign's cut model (--cut) shapes the cell, and
    # the cell's replay must name it.
    cuts: bool
    # At most this many of its points per row (per K, for a kind whose points are K:I),
    # drawn from the campaign's seed when a row offers more; None: every point. A kind
    # named in --points on its own, not through a group, gives every point.
    sampled: int | None

    def points(self, base: Baseline) -> list[CrashPoint]:
        """Every point of this kind the baseline offers, in order."""
        ...

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        """How to reach `point`; PointError when the baseline has no such point."""
        ...

    def describe(self, point: CrashPoint) -> str:
        """The point in words, with its numbers ("checkpoint 2 has landed, 3 has not")."""
        ...

    def run(self, cell: CellContext, plan: Plan) -> None:
        """Run the cell at this point: start, reach, crash or fault, continue, compare."""
        ...

    def unavailable(self, store_kind: str) -> str | None:
        """Why this kind cannot run here (a store it does not apply to, a missing
        facility), or None. Its cells are then skipped with the reason."""
        ...


def kill_at(cell: CellContext, plan: Plan) -> None:
    """The kill: a worker armed at the point, reached and SIGKILLed; then go on."""
    cell.after_crash(plan, cell.crash_at(plan))


def after_checkpoint(base: Baseline, point: CrashPoint) -> Plan:
    """The plan of a point at a boundary: checkpoint K has landed, K+1 has not (armed at
    K's `landed` gate). Shared by every kind that acts between two checkpoints."""
    from killpoint.errors import PointError
    from killpoint.scenarios import gates

    k = point.k
    if not 1 <= k < base.checkpoints:
        inside = (
            sentences.numbers("boundary", list(range(1, base.checkpoints)))
            if base.checkpoints > 1
            else "no boundary between two"
        )
        raise PointError(
            f"killpoint: {point} is not a boundary of this baseline; it has "
            f"{sentences.count(base.checkpoints, 'checkpoint')}, {inside}"
        )
    gate = gates.checkpoint_gate(k, "landed")
    run, started = base.run_at(base.position(gate))
    return Plan(point, (gate,), frozenset({gate}), k, run, started)


def boundaries_in_flight(name: str, base: Baseline) -> list[CrashPoint]:
    """The boundaries after which a run is still going (something left to take over)."""
    from killpoint.values.points import CrashPoint

    return [CrashPoint(name, k) for k in range(1, base.checkpoints) if base.in_flight_after(k)]


def shape(name: str, arity: int) -> str:
    return f"{name}:K:I" if arity == 2 else f"{name}:K"


def numbers(points: Sequence[CrashPoint]) -> list[int]:
    return sorted({p.k for p in points})


__all__ = [
    "CellContext",
    "CellEvidence",
    "CellStore",
    "CellWorkers",
    "Crashed",
    "Plan",
    "PointKind",
    "after_checkpoint",
    "boundaries_in_flight",
    "kill_at",
    "numbers",
    "shape",
]
