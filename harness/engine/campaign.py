"""A campaign: the crash matrix of one configuration, planned from baselines and run in parallel."""

from __future__ import annotations

import queue
import random
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from killpoint import kinds, scenarios
from killpoint.adapters.protocol import RuntimeAdapter, declined_kinds
from killpoint.engine.cell_log import CellLog, heads, select
from killpoint.engine.engine import Engine
from killpoint.engine.heap_trim import HeapTrimmer
from killpoint.engine.options import CampaignConfig, default_workers
from killpoint.engine.row_trace import Trace, copyable
from killpoint.engine.scheduler import (
    NO_THREAD,
    CellOrder,
    Scheduler,
    StopCondition,
    as_planned,
    never,
)
from killpoint.engine.signal_hold import SignalHold
from killpoint.engine.state_copy import Copy
from killpoint.errors import ConfigError, Interrupted, OptionError, PointError
from killpoint.judge.baseline import Baseline
from killpoint.judge.groups import Accepted, Group, apply_accepted, group_findings, row_groups
from killpoint.values.cell import Cell, CellResult, Row
from killpoint.values.findings import Finding, verdict_of
from killpoint.values.modes import find
from killpoint.values.points import CrashPoint, Schedule
from killpoint.values.scenario_refs import resolve_scenario
from killpoint.values.sentences import count
from killpoint.workers.processes import kill_all

# The reference runtime's modes come first in reports, in this order; others by name.
MODES = ("runs", "tool-batch", "tool")


@dataclass
class Skipped:
    runtime: str
    scenario: str
    mode: str
    reason: str
    point: str | None = None  # an explicit point this row lacks; None: the whole row


@dataclass
class CampaignResult:
    config: CampaignConfig
    seed: int
    # Finished cells; a campaign keeps them as a CellLog (evidence compressed).
    cells: Sequence[CellResult] = field(default_factory=CellLog)
    skipped: list[Skipped] = field(default_factory=list)
    baselines: list[Baseline] = field(default_factory=list)
    seconds: float = 0.0
    interrupted: bool = False
    signal: int | None = None  # what interrupted it (SIGINT, SIGTERM, SIGHUP)
    planned: int = 0
    # Each planned row (runtime, scenario, mode, store) and the schedules of its cells, in
    # order; None: the campaign stopped before the row's cells were planned (its baseline
    # had not finished). What the reports tell "not run" from "not applicable" by.
    plan: dict[Row, list[str] | None] = field(default_factory=dict)

    accepted: dict[str, Accepted] = field(default_factory=dict)  # --accept
    # Stores that could not be dropped, even when retried at the end (StoreLeftover.to_json).
    leftover_stores: list[dict[str, str]] = field(default_factory=list)

    @property
    def unexpected(self) -> list[CellResult]:
        """The cells that fail the run: unexpected and not accepted."""
        return select(self.cells, lambda c: c.failing)

    def groups(self) -> list[Group]:
        return group_findings(heads(self.cells))

    def row_groups(self) -> list[Group]:
        """What the rows' uninterrupted runs showed: each happens without a crash."""
        return row_groups(self.baselines, self.accepted)

    @property
    def failing_rows(self) -> list[Group]:
        """Row-level groups that fail the run (not accepted, naming a verdict)."""
        return [g for g in self.row_groups() if g.failing]

    @property
    def failing(self) -> bool:
        """An unexpected cell, or a row that breaks the contract without a crash."""
        return bool(self.unexpected or self.failing_rows)

    def summary(self) -> dict[str, Any]:
        return summarize(self.cells, self.planned, self.seconds, len(self.failing_rows))


def summarize(
    cells: Sequence[CellResult], planned: int, seconds: float, without_crash: int = 0
) -> dict[str, Any]:
    """The figures of a campaign's finished cells (a report's `summary`); `without_crash`:
    the rows' failing groups (CampaignResult.failing_rows)."""
    count = len(cells)
    cells = heads(cells)
    by: dict[str, int] = {}
    for c in cells:
        by[c.verdict] = by.get(c.verdict, 0) + 1
    groups = group_findings(cells)
    return {
        "cells": count,
        "planned": planned,
        "unexpected": sum(1 for c in cells if c.failing),
        # Unexpected, but every unexpected finding low (usage, an order, bookkeeping):
        # shown apart, failing only under --fail-on low.
        "low": sum(1 for c in cells if c.low),
        "accepted": sum(1 for c in cells if c.accepted),
        "errors": by.get("error", 0),
        "groups": sum(1 for g in groups if g.failing),
        "without_crash": without_crash,
        "findings": sum(len(c.findings) for c in cells),
        "expected_losses": sum(1 for c in cells if c.verdict == "lost" and c.expected),
        "duplicates": sum(c.duplicates for c in cells),
        "duplicates_beyond_bound": sum(max(0, c.duplicates - c.bound) for c in cells),
        "by_verdict": by,
        "missed": by.get("missed", 0),
        "seconds": round(seconds, 3),
        "cells_per_second": round(count / seconds, 2) if seconds else 0.0,
    }


class Recorder(Protocol):
    """Told what a campaign has done as it does it (a journal of finished cells)."""

    def planned(self, result: CampaignResult) -> None:
        """The baselines ran: `result` holds them, the skipped rows and the count planned."""

    def finished(self, cell: CellResult) -> None:
        """A cell finished and is recorded (called in the cell's thread, one at a time)."""


class Campaign:
    """One campaign. `accepted`: finding groups that do not fail it; `cells`: only these
    cell ids (a rerun of failed cells), else every cell the configuration plans; `order`
    and `stop`: which cells start first, and when to start no more (the scheduler's seams:
    killpoint.engine.scheduler)."""

    def __init__(
        self,
        config: CampaignConfig,
        *,
        accepted: dict[str, Accepted] | None = None,
        cells: list[str] | None = None,
        order: CellOrder = as_planned,
        stop: StopCondition = never,
    ) -> None:
        self.config = config
        self.order = order
        self.stop = stop
        self.accepted = accepted or {}
        self.trimmer = HeapTrimmer()
        self.only = None if cells is None else [kinds.parse_cell(c) for c in cells]
        if self.only is not None and config.shard is not None:
            # Known up front (a rerun): the rows no cell of this shard is in are never run.
            self.only = [c for c in self.only if config.shard.owns(c.id)]
        self.seed = config.seed if config.seed is not None else secrets.randbelow(2**31)
        self.engine = Engine(config.engine_config())
        self.store_kind = self.engine.stores.kind
        self.point_skips: list[Skipped] = []  # explicit points a row's baseline lacks
        # Points of kinds that cannot run here (no FUSE for power loss): one per row and kind.
        self.skipped_points: list[Skipped] = []

    def rows(self) -> tuple[list[Row], list[Skipped]]:
        if self.only is not None:
            return list(dict.fromkeys(c.row for c in self.only)), []
        adapter = self.engine.adapter(self.config.runtime)
        rows, skipped = [], []
        for name in self.config.scenario_names():
            scenario = resolve_scenario(name)
            for mode in self.config.mode_names():
                why = skip_reason(self.config.runtime, adapter, scenario, mode)
                if why is None:
                    rows.append((self.config.runtime, name, mode, self.store_kind))
                else:
                    skipped.append(Skipped(self.config.runtime, name, mode, why))
        return rows, skipped

    def cells_for(self, base: Baseline) -> list[Cell]:
        """The cells of the row this campaign runs: its shard's only, when sharded."""
        cells = self._row_cells(base)
        shard = self.config.shard
        return cells if shard is None else [c for c in cells if shard.owns(c.id)]

    def _row_cells(self, base: Baseline) -> list[Cell]:
        row = base.row
        if self.only is not None:
            only = [c for c in self.only if c.row == row]
            skip = self.skip_kinds(base, [p.kind for c in only for p in c.schedule])
            return [c for c in only if not any(p.kind in skip for p in c.schedule)]
        selection = self.config.points
        chosen, sample, explicit = selection.kinds, selection.sample, list(selection.explicit)
        skip = self.skip_kinds(base, [*chosen, *(p.kind for p in explicit)])
        chosen = tuple(k for k in chosen if k not in skip)
        explicit = [p for p in explicit if p.kind not in skip]
        if base.problem or base.nondeterministic:
            # The row cannot be planned; one cell carries its failure into the matrix.
            return [Cell(*row, schedule=Schedule((explicit or [kinds.stand_in()])[:1]))]
        offered = [p for p in explicit if self._offered(base, p)]
        points = offered + kinds.points_of(base, chosen)
        if sample is not None:
            rng = random.Random(f"{self.seed}/{'/'.join(row)}")
            points = sorted(rng.sample(points, min(sample, len(points))), key=kinds.point_order)
        schedules: list[tuple[CrashPoint, ...]] = [(p,) for p in points]
        if self.config.depth == 2:
            for p in points:
                if not kinds.is_kill(p):
                    continue
                try:
                    held = kinds.plan(base, p).checkpoints
                except PointError:
                    continue
                schedules += [(p, kinds.boundary(j)) for j in range(held + 1, base.checkpoints)]
        return [Cell(*row, schedule=Schedule(s)) for s in schedules]

    def _traced(self, base: Baseline, cell: Cell) -> bool:
        """Whether the cell resumes from a traced worker's copy (`--kills fast`)."""
        return self.config.kills == "fast" and copyable(cell, base)

    def _offered(self, base: Baseline, point: CrashPoint) -> bool:
        """Whether the row's baseline has an explicit point (`lock-held:2` of a row with one
        checkpoint does not): a point it lacks is skipped with the reason, not run as a
        `missed` cell."""
        try:
            kinds.plan(base, point)
        except PointError as exc:
            why = str(exc).removeprefix("killpoint: ")
            self.point_skips.append(
                Skipped(
                    base.runtime,
                    base.scenario,
                    base.mode,
                    f"point {point} is not in this row ({count(base.checkpoints, 'checkpoint')} in "
                    f"its baseline): {why}",
                    point=str(point),
                )
            )
            return False
        return True

    def skip_kinds(self, base: Baseline, names: list[str]) -> set[str]:
        """The kinds among `names` that cannot run here; their points in this row are
        skipped with the reason (never failed, never passed)."""
        found = kinds.unavailable(names, self.store_kind)
        declined = declined_kinds(self.engine.adapter(base.runtime))
        for name in dict.fromkeys(names):
            if name in declined and name not in found:
                found[name] = f"runtime {base.runtime!r} declines them: {declined[name]}"
        by_reason: dict[str, list[str]] = {}
        for name, why in found.items():
            by_reason.setdefault(why, []).append(name)
        for why, named in by_reason.items():
            self.skipped_points.append(
                Skipped(base.runtime, base.scenario, base.mode, f"{', '.join(named)} points: {why}")
            )
        return set(found)

    def run(
        self,
        on_planned: Callable[[int], None] = lambda n: None,
        on_cell: Callable[[CellResult], None] = lambda r: None,
        *,
        recorder: Recorder | None = None,
        hold: SignalHold | None = None,
    ) -> CampaignResult:
        """Run every cell. `recorder` is told the plan and each finished cell as it is
        recorded (a journal); `hold` is engaged from the first interrupt, or the last
        cell's end, and left engaged: the caller releases it once the reports are
        written, so that no signal cuts them off half-way."""
        t0 = time.monotonic()
        own_hold = hold is None
        hold = hold if hold is not None else SignalHold()
        books = Books(CampaignResult(self.config, self.seed, accepted=self.accepted), recorder)
        scheduler = Scheduler(self.engine.slots, order=self.order, stop=self.stop)
        try:
            by_row = self._plan(books, scheduler, on_planned)
            self._start(by_row, books, scheduler)
            scheduler.wait(lambda: books.report(on_cell), self.trimmer.maybe_trim)
            hold.engage()
        except KeyboardInterrupt as exc:
            hold.engage()
            books.result.interrupted = True
            books.result.signal = getattr(exc, "signum", None)
            self.engine.stopping.set()
            kill_all()
            # The cells in flight end as their workers die (none is a result); a second
            # signal gives them up at once.
            if not scheduler.wind_down(kill_all, lambda: bool(hold.received)):
                books.close()
        finally:
            scheduler.shutdown(wait=not books.closed)
            # Every cell has ended and killed its workers: whatever folder none of them
            # kept or removed goes now.
            self.engine.sweep()
            books.result.leftover_stores = [x.to_json() for x in self.engine.retry_leftovers()]
        books.report(on_cell)
        books.cells.sort(key=cell_order)
        books.result.seconds = time.monotonic() - t0
        if own_hold:
            hold.release()  # nobody else writes a report of this run: signals are live again
        return books.result

    def _plan(
        self, books: Books, scheduler: Scheduler, on_planned: Callable[[int], None]
    ) -> list[tuple[Baseline, list[Cell]]]:
        """Each row's baseline (run at once, in parallel), then its cells, recorded as the
        plan."""
        result = books.result
        rows, result.skipped = self.rows()
        result.plan = dict.fromkeys(rows)
        baselines = [f.result() for f in [scheduler.at_once(self.engine.baseline, r) for r in rows]]
        result.baselines = baselines
        by_row = [(b, self.cells_for(b)) for b in baselines]
        cells = [c for _, row_cells in by_row for c in row_cells]
        plan: dict[Row, list[str]] = {row: [] for row in rows}
        for c in cells:
            plan.setdefault(c.row, []).append(str(c.schedule))
        result.plan = dict(plan)
        result.skipped += self.point_skips + self.skipped_points
        result.planned = len(cells)
        books.planned()
        on_planned(len(cells))
        return by_row

    def _start(
        self, by_row: list[tuple[Baseline, list[Cell]]], books: Books, scheduler: Scheduler
    ) -> None:
        """The rows' traced workers first, so that their cells can follow them while the
        cells that need a worker of their own run."""
        plain: list[Cell] = []
        for base, row_cells in by_row:
            fast = [c for c in row_cells if self._traced(base, c)]
            if len(fast) < 2:  # one cell: its own kill costs what a trace would
                plain += row_cells
                continue
            plain += [c for c in row_cells if c not in fast]
            traced = scheduler.slots.working(self._trace_row)
            if scheduler.start(traced, base, scheduler.order(fast), books, scheduler) is None:
                plain += fast
        for c in scheduler.order(plain):
            self._start_cell(c, books, scheduler)

    def _trace_row(
        self, base: Baseline, fast: list[Cell], books: Books, scheduler: Scheduler
    ) -> None:
        """The row's traced worker, then its cells: each from its point's copy, or, where
        the trace did not reach that point, with a kill of its own. None starts before the
        trace has ended and its worker is dead: a runtime that asks whether the process
        holding a run's lease is alive (the reference runtime does) must find it dead, as
        after a kill."""
        try:
            trace = self.engine.trace(base, [c.schedule.first for c in fast])
        except Interrupted:
            raise
        except Exception as exc:  # killpoint's own failure: the cells run for real
            trace = Trace(stopped=f"the trace failed: {type(exc).__name__}: {exc}")
        chosen = [(c, trace.copies.get(c.schedule.first)) for c in fast]
        for _, copy in chosen:
            if copy is not None:
                copy.users += 1  # all counted before any cell can end
        for copy in {id(c): c for c in trace.copies.values()}.values():
            if copy.users == 0:
                copy.done_with(self.engine)
        for c, copy in chosen:
            why = trace.missed.get(c.schedule.first, trace.stopped)
            note = (
                f"its row's traced worker did not reach this point ({why}): a worker of its "
                "own is killed"
            )
            self._start_cell(c, books, scheduler, copy, None if copy else note)

    def _start_cell(
        self,
        cell: Cell,
        books: Books,
        scheduler: Scheduler,
        copy: Copy | None = None,
        note: str | None = None,
    ) -> None:
        if scheduler.start(self._run_cell, cell, books, scheduler, copy, note) is not None:
            return
        if copy is not None:
            copy.done_with(self.engine)
        if scheduler.stopped is None:  # no thread to run it: the cell is killpoint's failure
            books.record(no_thread_result(cell))

    def _run_cell(
        self,
        cell: Cell,
        books: Books,
        scheduler: Scheduler,
        copy: Copy | None = None,
        note: str | None = None,
    ) -> None:
        """One cell in a slot (none once the scheduler has stopped starting cells),
        recorded by its own thread: an interrupt is raised in the main thread only, so
        between a cell's end and its record there is no moment where it could be lost (or
        counted twice)."""

        def judged() -> CellResult | None:
            return None if scheduler.stopped else self.engine.run_cell(cell, copy, note)

        try:
            r = self.engine.slots.working(judged)()
        finally:
            if copy is not None:
                copy.done_with(self.engine)
        if r is not None:
            apply_accepted([r], self.accepted)
            books.record(r)


class Books:
    """What one run of a campaign records: its result, each cell as it ends (in the cell's
    thread), and the news of them for the main thread to report."""

    def __init__(self, result: CampaignResult, recorder: Recorder | None) -> None:
        self.result = result
        self.cells = CellLog()
        result.cells = self.cells
        self.recorder = recorder
        self.closed = False  # given up: what still finishes is in no report
        self._lock = threading.Lock()
        self._news: queue.SimpleQueue[CellResult] = queue.SimpleQueue()

    def planned(self) -> None:
        if self.recorder is not None:
            self.recorder.planned(self.result)

    def record(self, cell: CellResult) -> None:
        with self._lock:
            if self.closed:
                return
            self.cells.append(cell)
            if self.recorder is not None:
                self.recorder.finished(cell)
        self._news.put(cell)

    def close(self) -> None:
        with self._lock:
            self.closed = True

    def report(self, on_cell: Callable[[CellResult], None]) -> None:
        """Each cell recorded since the last report, to `on_cell` (in the main thread)."""
        while True:
            try:
                on_cell(self._news.get_nowait())
            except queue.Empty:
                return


def no_thread_result(cell: Cell) -> CellResult:
    """A cell that no thread could be started for: killpoint's failure, not the runtime's."""
    finding = Finding(
        "resource-exhausted",
        f"no thread could be started for this cell ({NO_THREAD}: the process's limit on "
        "memory or threads, e.g. `ulimit -v` or `ulimit -u`); nothing is said of the runtime "
        "here (rerun the cell)",
        path="threads",
        expected=True,
    )
    verdict, expected = verdict_of([finding])
    return CellResult(
        id=cell.id,
        runtime=cell.runtime,
        scenario=cell.scenario,
        mode=cell.mode,
        store=cell.store,
        schedule=[str(p) for p in cell.schedule],
        verdict=verdict,
        expected=expected,
        detail=finding.sentence,
        findings=[finding.to_json()],
        replay=cell.replay_command(),
    )


def skip_reason(
    runtime: str, adapter: RuntimeAdapter, scenario: scenarios.Scenario, mode_name: str
) -> str | None:
    """Why a row is not run (the runtime's own reason when it gives one), or None."""
    mode = find(adapter.modes, mode_name)
    if mode is None:
        return f"runtime {runtime!r} does not offer mode {mode_name!r}"
    if mode.unavailable is not None:
        return f"runtime {runtime!r} cannot run mode {mode_name!r}: {mode.unavailable}"
    if scenario.mid_run_only and not mode.persists_mid_run:
        return (
            f"scenario {scenario.name!r} runs only in modes that persist mid-run; "
            f"{mode_name!r} writes at the end"
        )
    return adapter.unsupported(scenario, mode_name)


def _sort_key(point: str) -> tuple[int, int, int]:
    try:
        return kinds.point_order(kinds.parse_point(point))
    except PointError:
        return (len(kinds.REGISTRY), 0, 0)  # a kind this version does not know: last


def cell_order(c: CellResult) -> tuple[Any, ...]:
    """Where a cell goes in a report: by row (the reference modes in their order), then
    by its points in the registry's order."""
    points = [_sort_key(p) for p in c.schedule]
    return (
        c.runtime,
        c.scenario,
        MODES.index(c.mode) if c.mode in MODES else len(MODES),
        c.mode,
        c.store,
        points,
    )


def sorted_cells(cells: Iterable[CellResult]) -> list[CellResult]:
    return sorted(cells, key=cell_order)


__all__ = [
    "MODES",
    "Campaign",
    "CampaignConfig",
    "CampaignResult",
    "ConfigError",
    "OptionError",
    "Recorder",
    "Skipped",
    "cell_order",
    "default_workers",
    "skip_reason",
    "sorted_cells",
    "summarize",
]
