"""A cell's run, its first part: the cell's state and its evidence (the timeline, the
findings, the repeats allowed), and the call into the engine that ends the cell when it
overruns. The store's reading (cell_store.py), the workers' steps (cell_workers.py) and
the cell's course (cell_run.py) build on it, one part per part of what a kind may ask
(killpoint.kinds.base: CellEvidence, CellStore, CellWorkers, CellContext).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from killpoint import kinds
from killpoint.adapters.protocol import bounded_reads
from killpoint.engine.deadline import Caller
from killpoint.engine.stall import paused_lock
from killpoint.errors import AdapterFault, Interrupted, Overdue
from killpoint.judge.baseline import Baseline
from killpoint.judge.oracle import (
    Sides,
    compare_sessions,
)
from killpoint.stores.outage import outage_finding
from killpoint.values.cell import Cell
from killpoint.values.durations import duration
from killpoint.values.findings import Finding
from killpoint.values.sentences import count
from killpoint.values.timeline import Event
from killpoint.workers.processes import Worker

if TYPE_CHECKING:
    from killpoint.engine.cell_host import CellHost
    from killpoint.engine.state_copy import Copy


Signature = tuple[str, str]
T = TypeVar("T")


class CellOver(Exception):
    """The cell cannot go on; its findings say why."""


class CellBase:
    """A cell's run as a kind's evidence sees it (killpoint.kinds.base.CellEvidence): its
    state, what happens (its timeline), what is found, and the step that ends it."""

    def __init__(self, engine: CellHost, cell: Cell, base: Baseline) -> None:
        self.engine = engine
        self.cell = cell
        self.base = base
        self.t0 = time.monotonic()
        # The same zero on the wall clock: the ledger stamps effects with time.time(), and
        # its lines are shown on the cell's one clock (never from their own first line).
        self.wall0 = time.time()
        self.timeline: list[Event] = []
        self.workers: list[Worker] = []
        self.findings: list[Finding] = []
        self.work: Path | None = None
        self.url = ""
        self.store_at_crash: dict[str, Any] | None = None
        self.allowed: Counter[Signature] = Counter()  # repeats the crashes so far allow
        self.left_out: dict[Signature, int] = {}  # call -> the checkpoint that left it out
        self.judged = False  # the run was continued to its end and compared
        self.rest = cell.schedule.rest  # crashes still to come (depth 2)
        self.terminal: dict[str, str] = {}  # run id -> the terminal status the store held
        self.sides = Sides()
        self.diff: list[dict[str, Any]] = []
        self.kind_evidence: dict[str, Any] = {}  # a kind's own, shown with the store at the crash
        self.confirmed: int | None = None  # checkpoints held when a lagging point was confirmed
        self.copy: Copy | None = None  # the state a traced worker left at the first point
        self.crashed = False  # the first crash happened (CrashWatcher told)
        # The engine-side calls into the adapter and the store server, each with a deadline.
        self.caller = Caller(f"cell-{cell.id}"[:40], engine.stopping)

    @property
    def cell_id(self) -> str:
        return self.cell.id

    @property
    def cut(self) -> str:
        return self.engine.config.cut

    def options(self) -> tuple[str, ...]:
        """The campaign's options this cell ran with that its id does not carry: a cut
        model other than the default, for a cell of a kind that cuts the power (whether
        or not it got as far as the cut)."""
        cuts = any(kinds.get(p.kind).cuts for p in self.cell.schedule)
        if cuts and self.cut != "synced":
            return ("--cut", self.cut)
        return ()

    def call(self, what: str, fn: Callable[..., T], *args: Any, dependency: bool = False) -> T:
        """`fn(*args)` in the engine, within the cell's time limit. Past it the cell ends:
        `hung` for the runtime's adapter, `unavailable` for a `dependency` (the store
        server)."""
        try:
            if self._keeps_own_deadline(dependency):
                return self._inline(what, fn, *args)
            return self.caller.call(what, self.engine.config.timeout, fn, *args)
        except Overdue as exc:
            self.fault(str(exc))
            if dependency:
                self.end(outage_finding("store-unavailable", f"the store server: {exc}", []))
            self.end(Finding("hung", f"{exc} (a call in killpoint's own process)"))
            raise  # not reached: end() raises
        except AdapterFault as exc:
            # A read that met a lock a paused worker holds is the store's locking.
            stall = paused_lock(self.url, self.workers, f"{what} failed: {exc}")
            if stall is not None:
                self.end(stall)
            raise

    def _keeps_own_deadline(self, dependency: bool) -> bool:
        """Whether the call keeps a deadline without a thread of its own: an embedded
        store's backend (a file here: no server to wait for), and an adapter that declares
        its reads bounded (`bounded_reads`: SQLite's busy timeout bounds every wait for a
        lock) on that store. Any other call is handed to the cell's caller thread, which
        gives up on it at the deadline (killpoint.engine.deadline)."""
        if not getattr(self.engine.stores, "embedded", False):
            return False
        return dependency or bounded_reads(self.engine.adapter(self.cell.runtime))

    def _inline(self, what: str, fn: Callable[..., T], *args: Any) -> T:
        """The call in this thread; one that returned past the cell's time limit is
        overdue all the same."""
        if self.engine.stopping.is_set():
            raise Interrupted()
        limit = self.engine.config.timeout
        t0 = time.monotonic()
        value = fn(*args)
        if time.monotonic() - t0 > limit:
            raise Overdue(what, limit, duration(limit))
        return value

    def event(self, text: str, kind: str = "other", lane: str = "harness") -> None:
        self.timeline.append(Event(round(time.monotonic() - self.t0, 4), text, kind, lane))

    def fault(self, text: str) -> None:
        self.event(text, "fault", "faults")

    def deadline(self) -> float:
        return time.monotonic() + self.engine.config.timeout

    def add(self, finding: Finding) -> None:
        self.findings.append(finding)

    def evidence(self, name: str, value: dict[str, Any]) -> None:
        self.kind_evidence[name] = value

    def end(self, finding: Finding) -> None:
        # A worker that waited on, or failed at, SQLite's lock held by a paused worker.
        if finding.kind == "hung" or (
            finding.kind == "unresumable" and "database is locked" in finding.sentence
        ):
            finding = paused_lock(self.url, self.workers, finding.sentence) or finding
        self.add(finding)
        raise CellOver(finding.sentence)

    def allow(self, signatures: Counter[Signature], why: str) -> None:
        """Each call may repeat once more (its effect happened, its result is not durable)."""
        self.allowed += signatures
        n = sum(signatures.values())
        self.event(f"{count(n, 'call')} {why}")

    def compare_sides(self, expected: Any, actual: Any, sides: Sides) -> list[Finding]:
        return compare_sessions(expected, actual, sides)


__all__ = ["CellBase", "CellOver", "Signature"]
