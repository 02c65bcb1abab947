"""A campaign: the crash matrix of one configuration, planned from baselines and run in parallel."""

from __future__ import annotations

import queue
import random
import secrets
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Protocol

from killpoint import kinds, scenarios
from killpoint.adapters.protocol import RuntimeAdapter, declined_kinds, store_unsupported
from killpoint.engine.cell_log import CellLog, heads, select
from killpoint.engine.engine import Engine
from killpoint.engine.heap_trim import HeapTrimmer
from killpoint.engine.options import CampaignConfig, default_workers
from killpoint.engine.row_trace import Trace, copyable
from killpoint.engine.run_order import CellOrder, Key, RunOrder
from killpoint.engine.scheduler import NO_THREAD, Scheduler, StopCondition, never
from killpoint.engine.signal_hold import SignalHold
from killpoint.engine.state_copy import Copy
from killpoint.engine.stop_rule import Stopped, StopRule, coverage
from killpoint.errors import ConfigError, Interrupted, OptionError, PointError
from killpoint.judge.baseline import Baseline
from killpoint.judge.groups import Accepted, Group, apply_accepted, group_findings, row_groups
from killpoint.values.cell import Cell, CellResult, Row
from killpoint.values.findings import Finding, verdict_of
from killpoint.values.modes import find
from killpoint.values.points import CrashPoint, Schedule
from killpoint.values.scenario_refs import resolve_scenario
from killpoint.values.sentences import count
from killpoint.workers.processes import kill_all, use_huge_pages

# The reference runtime's modes come first in reports, in this order; others by name.
MODES = ("runs", "tool-batch", "tool")
# The baseline failures that still ran the scenario to its end (it acknowledged what its
# store does not hold; its mode breaks what it declares): its trace offers every point a
# working row's would, so the crash cells its row would have had can be counted. Any other
# failure cut the run short, and a count from its trace would be too low to tell.
WHOLE_RUN_PROBLEMS = frozenset({"acknowledged-lost", "mode-broken"})
# A campaign whose floor on cells (at_least_cells) is this or more has its forkserver's
# heap on huge pages: about 0.2 s of CPU as the forkserver starts, some 3 ms less for each
# worker it forks (1.5 a cell), so it pays from about 40 cells on; the floor counts one
# cell per row and kind, a third or less of what a row plans.
HUGE_PAGES_FROM = 40


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

    # The rows whose baseline failed, so that their crash cells were not planned (one cell
    # each carries the failure instead), and how many crash cells each would have had: None
    # when its baseline did not run far enough to say (killpoint.report.planned.NotPlanned).
    not_planned: dict[Row, int | None] = field(default_factory=dict)

    # Stopped before its plan was done (--fail-fast, --budget): why, and what it covered.
    stopped: Stopped | None = None

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
        """The plan so far: `result` holds the baselines done, the skipped rows and the
        count planned. Told as each row is planned, and last once every baseline ran."""

    def finished(self, cell: CellResult) -> None:
        """A cell finished and is recorded (called in the cell's thread, one at a time)."""


class Campaign:
    """One campaign. `accepted`: finding groups that do not fail it; `cells`: only these
    cell ids (a rerun of failed cells), else every cell the configuration plans; `failed`:
    ids of cells that failed before (the last report's), which run early; `order`: which
    cells start first (by default the configuration's: killpoint.engine.run_order); `stop`:
    when to start no more, besides --fail-fast and --budget (killpoint.engine.stop_rule)."""

    def __init__(
        self,
        config: CampaignConfig,
        *,
        accepted: dict[str, Accepted] | None = None,
        cells: list[str] | None = None,
        failed: Iterable[str] = (),
        order: CellOrder | None = None,
        stop: StopCondition = never,
    ) -> None:
        self.config = config
        self.stop = stop
        self.accepted = accepted or {}
        self.trimmer = HeapTrimmer()
        self.only = None if cells is None else [kinds.parse_cell(c) for c in cells]
        if self.only is not None and config.shard is not None:
            # Known up front (a rerun): the rows no cell of this shard is in are never run.
            self.only = [c for c in self.only if config.shard.owns(c.id)]
        self.seed = config.seed if config.seed is not None else secrets.randbelow(2**31)
        self.order: CellOrder = (
            RunOrder(self.seed, frozenset(failed), config.order) if order is None else order
        )
        self.engine = Engine(config.engine_config())
        self.store_kind = self.engine.stores.kind
        self.point_skips: list[Skipped] = []  # explicit points a row's baseline lacks
        # Points of kinds that cannot run here (no FUSE for power loss): one per row and kind.
        self.skipped_points: list[Skipped] = []
        # Rows whose baseline ran but offers no point of the kinds asked for: one each.
        self.empty_rows: list[Skipped] = []
        # Rows whose baseline failed: the crash cells each would have had (CampaignResult's).
        self.not_planned: dict[Row, int | None] = {}

    def at_least_cells(self, rows: list[Row]) -> int:
        """A floor on the cells `rows` will plan, known before any baseline: one per row and
        kind asked for (a row offers most kinds several points)."""
        if self.only is not None:
            return len(self.only)
        selection = self.config.points
        return len(rows) * (len(selection.kinds) + len(selection.explicit))

    def rows(self) -> tuple[list[Row], list[Skipped]]:
        if self.only is not None:
            return list(dict.fromkeys(c.row for c in self.only)), []
        adapter = self.engine.adapter(self.config.runtime)
        rows, skipped = [], []
        for name in self.config.scenario_names():
            scenario = resolve_scenario(name)
            for mode in self.config.mode_names():
                why = skip_reason(self.config.runtime, adapter, scenario, mode, self.store_kind)
                if why is None:
                    rows.append((self.config.runtime, name, mode, self.store_kind))
                else:
                    skipped.append(Skipped(self.config.runtime, name, mode, why))
        return rows, skipped

    def cells_for(self, base: Baseline) -> list[Cell]:
        """The cells of the row this campaign runs: its shard's only, when sharded."""
        return self.ordered_cells(base)[0]

    def ordered_cells(self, base: Baseline, row: int = 0) -> tuple[list[Cell], dict[str, Key]]:
        """The row's cells this campaign runs (its shard's, when sharded), and the key of
        each in the order cells run in. The keys are of the whole row's cells, so that a
        shard runs its cells in the order the whole campaign would; `row`: the row's place
        in the plan."""
        cells = self._row_cells(base)
        keys = self.order.keys(cells, row)
        shard = self.config.shard
        return (cells if shard is None else [c for c in cells if shard.owns(c.id)]), keys

    def _row_cells(self, base: Baseline) -> list[Cell]:
        row = base.row
        if self.only is not None:
            only = [c for c in self.only if c.row == row]
            skip = self.skip_kinds(base, [p.kind for c in only for p in c.schedule])
            if base.problem or base.nondeterministic:
                # A rerun's cells of a row whose baseline fails now make no crash either
                # (each carries the failure): its reports must say so, as a campaign's do.
                # How many crash cells the row offers is the first campaign's to say.
                self.not_planned[row] = None
            return [c for c in only if not any(p.kind in skip for p in c.schedule)]
        selection = self.config.points
        chosen, explicit = selection.kinds, list(selection.explicit)
        skip = self.skip_kinds(base, [*chosen, *(p.kind for p in explicit)])
        chosen = tuple(k for k in chosen if k not in skip)
        explicit = [p for p in explicit if p.kind not in skip]
        if base.problem or base.nondeterministic:
            # The row cannot be planned; one cell carries its failure into the matrix, and
            # the reports say which cells it stands for.
            self.not_planned[row] = self._would_plan(base, chosen, explicit)
            return [Cell(*row, schedule=Schedule((explicit or [kinds.stand_in()])[:1]))]
        schedules = self._schedules(base, chosen, explicit, self.point_skips)
        if not schedules and chosen:
            # The kinds asked for that can run here offer no point in this row: the row is
            # said skipped, with why, as a row that cannot run is (an explicit point it
            # lacks, a kind that cannot run here, each said already).
            self.empty_rows.append(
                Skipped(base.runtime, base.scenario, base.mode, self._no_point(base, chosen))
            )
        return [Cell(*row, schedule=Schedule(s)) for s in schedules]

    def _no_point(self, base: Baseline, chosen: tuple[str, ...]) -> str:
        """Why a row whose baseline ran offers no point of the kinds asked for: what of
        the run the points are made from (its checkpoints, its tool batches), and a mode
        that writes only at a run's end."""
        mode = find(self.engine.adapter(base.runtime).modes, base.mode)
        why = (
            f"no {', '.join(chosen)} point in this row: its baseline has "
            f"{count(base.checkpoints, 'checkpoint')} and {count(len(base.batches), 'tool batch')}"
        )
        if mode is not None and not mode.persists_mid_run:
            why += f"; mode {base.mode!r} writes only at a run's end"
        return why

    def _would_plan(
        self, base: Baseline, chosen: tuple[str, ...], explicit: list[CrashPoint]
    ) -> int | None:
        """How many crash cells the row of a failed baseline would have had (all shards'),
        when its run reached its end; None otherwise (its trace offers fewer points), and
        None for none: a run whose failure left it no point of these kinds (its one
        checkpoint never landed) says nothing of how many a working one would offer."""
        whole = base.problem is None or base.problem_kind in WHOLE_RUN_PROBLEMS
        if not whole or not base.trace:
            return None
        try:
            # Its points' skips are not the campaign's: none of them is planned.
            return len(self._schedules(base, chosen, explicit, [])) or None
        except PointError:
            return None

    def _schedules(
        self,
        base: Baseline,
        chosen: tuple[str, ...],
        explicit: list[CrashPoint],
        skips: list[Skipped],
    ) -> list[tuple[CrashPoint, ...]]:
        """The schedules of the row's crash cells; an explicit point its baseline lacks is
        added to `skips` with the reason."""
        row = base.row
        selection = self.config.points
        sample = selection.sample
        offered = [p for p in explicit if self._offered(base, p, skips)]
        # A kind that keeps a few of a long row's points keeps them from the seed.
        seeded = f"{self.seed}/{'/'.join(row)}"
        points = offered + kinds.sample(kinds.points_of(base, chosen), seeded, selection.named)
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
        return schedules

    def _traced(self, base: Baseline, cell: Cell) -> bool:
        """Whether the cell resumes from a traced worker's copy (`--kills fast`)."""
        return self.config.kills == "fast" and copyable(cell, base)

    def _offered(self, base: Baseline, point: CrashPoint, skips: list[Skipped]) -> bool:
        """Whether the row's baseline has an explicit point (`lock-held:2` of a row with one
        checkpoint does not): a point it lacks is skipped with the reason (into `skips`),
        not run as a `missed` cell."""
        try:
            kinds.plan(base, point)
        except PointError as exc:
            why = str(exc).removeprefix("killpoint: ")
            skips.append(
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
        """Run every cell, the most informative first (killpoint.engine.run_order), each
        row's as soon as its own baseline is done. `recorder` is told the plan and each
        finished cell as it is recorded (a journal); `hold` is engaged from the first
        interrupt, or the last cell's end, and left engaged: the caller releases it once
        the reports are written, so that no signal cuts them off half-way. With
        --fail-fast or --budget (or a `stop` of its own) the campaign may stop early: the
        cells at work are stopped as at an interrupt, and `result.stopped` says what ran."""
        t0 = time.monotonic()
        own_hold = hold is None
        hold = hold if hold is not None else SignalHold()
        rule = StopRule(budget=self.config.budget, fail_fast=self.config.fail_fast, started=t0)
        books = Books(
            CampaignResult(self.config, self.seed, accepted=self.accepted), recorder, rule.after
        )

        def stop() -> str | None:
            return rule.reason if rule.due() else self.stop()

        scheduler = Scheduler(self.engine.slots, stop=stop, left=rule.left)
        try:
            self._plan(books, scheduler)
            scheduler.wait(
                lambda: books.announce_when_planned(on_planned),
                lambda: books.report(on_cell),
                self.trimmer.maybe_trim,
            )
            if scheduler.stopped is not None:
                self.engine.stopping.set()
                kill_all()
                if not scheduler.wind_down(kill_all, lambda: bool(hold.received)):
                    books.close()
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
        if not books.announced:  # stopped during the baselines: the rows planned so far
            books.settle_plan()
        else:
            books.report(on_cell)
        books.cells.sort(key=cell_order)
        result = books.result
        result.seconds = time.monotonic() - t0
        if scheduler.stopped is not None and not result.interrupted:
            result.stopped = Stopped(
                scheduler.stopped,
                rule.fired_at or result.seconds,
                rule.budget,
                coverage(result.plan, books.cells.heads(), result.not_planned),
            )
        if own_hold:
            hold.release()  # nobody else writes a report of this run: signals are live again
        return result

    def _plan(self, books: Books, scheduler: Scheduler) -> None:
        """Each row's baseline, started in parallel: each plans its row's cells and starts
        them when it is done, no other row waited for (a row's baseline goes after the
        first cells of the rows already planned: run_order.baseline_key)."""
        result = books.result
        rows, result.skipped = self.rows()
        if self.at_least_cells(rows) >= HUGE_PAGES_FROM:
            use_huge_pages()  # before the first worker (a baseline) starts the forkserver
        result.plan = dict.fromkeys(rows)
        books.rows = rows
        # Filled as rows are planned.
        books.skips = (self.point_skips, self.skipped_points, self.empty_rows)
        books.not_planned = self.not_planned  # so is this
        books.say_plan_so_far()
        for n, row in enumerate(rows):
            key = self.order.baseline_key(n)
            # Run here when no thread can be started: every cell of the row needs it.
            future = scheduler.start(self._baseline, n, row, books, scheduler, key=key, inline=True)
            if future is not None:
                books.baselines.append(future)

    def _baseline(self, n: int, row: Row, books: Books, scheduler: Scheduler) -> Baseline:
        """The row's baseline (in a slot); then its cells, planned and started."""
        base: Baseline = scheduler.slots.working(self.engine.baseline)(row)
        row_cells, keys = self.ordered_cells(base, n)
        books.plan_row(n, base, row_cells)
        if not self.engine.stopping.is_set():
            self._start(base, row_cells, keys, books, scheduler)
        return base

    def _start(
        self,
        base: Baseline,
        row_cells: list[Cell],
        keys: dict[str, Key],
        books: Books,
        scheduler: Scheduler,
    ) -> None:
        """A row's cells, into the pool as its baseline is done: its traced worker as early
        as its first cell, so that its cells can follow it while the cells that need a
        worker of their own run."""
        fast = [c for c in row_cells if self._traced(base, c)]
        plain = row_cells
        if len(fast) >= 2:  # one cell: its own kill costs what a trace would
            traced = scheduler.slots.working(self._trace_row)
            key = min(keys[c.id] for c in fast)
            if scheduler.start(traced, base, fast, keys, books, scheduler, key=key) is not None:
                plain = [c for c in row_cells if c not in fast]
        for c in plain:
            self._start_cell(c, keys[c.id], books, scheduler)

    def _trace_row(
        self,
        base: Baseline,
        fast: list[Cell],
        keys: dict[str, Key],
        books: Books,
        scheduler: Scheduler,
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
            self._start_cell(c, keys[c.id], books, scheduler, copy, None if copy else note)

    def _start_cell(
        self,
        cell: Cell,
        key: Key,
        books: Books,
        scheduler: Scheduler,
        copy: Copy | None = None,
        note: str | None = None,
    ) -> None:
        started = scheduler.start(self._run_cell, cell, books, scheduler, copy, note, key=key)
        if started is not None:
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
    """What one run of a campaign records: its plan, row by row as each baseline is done
    (in the baseline's thread), each cell as it ends (in the cell's thread), and the news
    of them for the main thread to report. `after`: told each cell recorded (the stop
    rule)."""

    def __init__(
        self,
        result: CampaignResult,
        recorder: Recorder | None,
        after: Callable[[CellResult], object] = lambda cell: None,
    ) -> None:
        self.result = result
        self.cells = CellLog()
        result.cells = self.cells
        self.recorder = recorder
        self.after = after
        self.closed = False  # given up: what still finishes is in no report
        self.rows: list[Row] = []  # the rows planned, in the plan's order
        # Lists of points the rows skip, filled in as their baselines are done.
        self.skips: tuple[list[Skipped], ...] = ()
        # The rows whose baseline failed, filled in as well (Campaign.not_planned).
        self.not_planned: dict[Row, int | None] = {}
        self.baselines: list[Future[Baseline]] = []
        self.announced = False  # every baseline is done, and the plan was said
        self._planned: dict[int, tuple[Baseline, list[Cell]]] = {}  # by the row's place
        self._lock = threading.Lock()
        self._plan_lock = threading.Lock()  # the plan is worked out and said one at a time
        self._news: queue.SimpleQueue[CellResult] = queue.SimpleQueue()

    def plan_row(self, n: int, base: Baseline, cells: list[Cell]) -> None:
        with self._lock:
            self._planned[n] = (base, cells)
        self.say_plan_so_far()

    def say_plan_so_far(self) -> None:
        """The plan so far, to the recorder: before any baseline (every row, none planned
        yet) and as each row is planned, so that a campaign killed before its last
        baseline leaves a journal that still says which rows it planned and which not.
        One at a time, so that the last said holds every row planned before it."""
        if self.recorder is None:
            return
        with self._plan_lock:
            view = self.settled()
            with self._lock:
                if not self.closed and not self.announced:
                    self.recorder.planned(view)

    def announce_when_planned(self, on_planned: Callable[[int], None]) -> None:
        """Once every baseline is done: the plan is whole, and said (to the recorder,
        then `on_planned`); the cells recorded before it are reported after it."""
        if self.announced or not all(f.done() for f in self.baselines):
            return
        with self._plan_lock:
            self.announced = True
            self.settle_plan()
            if self.recorder is not None:
                with self._lock:
                    self.recorder.planned(self.result)
        on_planned(self.result.planned)

    def settle_plan(self) -> None:
        """The campaign's result takes the plan as the rows planned so far make it."""
        view, result = self.settled(), self.result
        result.baselines, result.plan = view.baselines, view.plan
        result.not_planned, result.planned = view.not_planned, view.planned
        result.skipped = view.skipped

    def settled(self) -> CampaignResult:
        """The plan as the rows planned so far make it, in the rows' order whichever
        baseline finished first: their baselines, the schedules of their cells, what was
        skipped. The campaign's result is left as it was."""
        result, rows = self.result, self.rows
        with self._lock:
            planned = dict(self._planned)
        done = sorted(planned)
        view = CampaignResult(result.config, result.seed, accepted=result.accepted)
        view.baselines = [planned[n][0] for n in done]
        view.plan = dict(result.plan)
        view.not_planned = dict(result.not_planned)
        for n in done:
            view.plan[rows[n]] = [str(c.schedule) for c in planned[n][1]]
            if rows[n] in self.not_planned:
                view.not_planned[rows[n]] = self.not_planned[rows[n]]
        view.planned = sum(len(planned[n][1]) for n in done)
        place = {row[:3]: n for n, row in enumerate(rows)}
        # Stable: a row's own skips stay in the order its thread found them.
        found = [s for skips in self.skips for s in list(skips)]
        view.skipped = [
            *result.skipped,
            *sorted(found, key=lambda s: place.get((s.runtime, s.scenario, s.mode), len(rows))),
        ]
        return view

    def record(self, cell: CellResult) -> None:
        with self._lock:
            if self.closed:
                return
            self.cells.append(cell)
            if self.recorder is not None:
                self.recorder.finished(cell)
        self.after(cell)
        self._news.put(cell)

    def close(self) -> None:
        with self._lock:
            self.closed = True

    def report(self, on_cell: Callable[[CellResult], None]) -> None:
        """Each cell recorded since the last report, to `on_cell` (in the main thread),
        once the plan was said."""
        if not self.announced:
            return
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
    runtime: str,
    adapter: RuntimeAdapter,
    scenario: scenarios.Scenario,
    mode_name: str,
    store_kind: str | None = None,
) -> str | None:
    """Why a row is not run (the runtime's own reason when it gives one), or None;
    `store_kind`: the row's store, checked against the stores the adapter declares."""
    if store_kind is not None:
        # First: a store the runtime cannot use is why every row of the campaign is not run.
        why = store_unsupported(runtime, adapter, store_kind)
        if why is not None:
            return why
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
