"""A campaign: the crash matrix of one configuration, planned from baselines and run in parallel."""

from __future__ import annotations

import os
import random
import secrets
import threading
import time
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from killpoint import scenarios

from . import kinds
from .adapter import AdapterError, RuntimeAdapter, load_adapter
from .baseline import Baseline
from .cell import Cell, CellResult
from .engine import Engine, EngineConfig, Interrupted
from .modes import find, runnable
from .points import CrashPoint, PointError
from .processes import kill_all, socket_problem
from .stores import StoreError, Stores
from .targets import ScenarioRefError, resolve_scenario
from .work_root import check_work_dir

# The reference runtime's modes come first in reports, in this order; others by name.
MODES = ("runs", "tool-batch", "tool")
KEEP = ("none", "failed", "all")


def default_workers() -> int:
    """Cells at once: twice the cores. A cell spends much of its time waiting (on its
    workers' pipes, on the store), so two per core keep the cores busy; measured on 2
    cores: 6.2 cells/s with 2 at once, 8.6 with 4, no better beyond."""
    return 2 * (os.cpu_count() or 1)


class ConfigError(ValueError):
    """A campaign option with a bad value; the message names the value and the choices."""


@dataclass
class CampaignConfig:
    runtime: str = "reference"
    scenarios: tuple[str, ...] = ()  # empty: every built-in
    modes: tuple[str, ...] = ()  # empty: every mode the runtime can run
    points: str = "all"
    depth: int = 1
    seed: int | None = None
    store: str = "sqlite"
    workers: int = field(default_factory=lambda: default_workers())
    timeout: float = 30.0
    keep: str = "failed"
    work_root: Path | None = None  # the cells' folders go right here
    work_parent: Path | None = None  # or in a new killpoint-* folder here (--work-dir)

    def validate(self) -> None:
        """Check every option before anything runs; raise ConfigError naming the fix."""
        problem = socket_problem()
        if problem:
            raise ConfigError(problem)
        try:
            adapter = load_adapter(self.runtime)
        except AdapterError as exc:
            raise ConfigError(str(exc)) from None
        for name in self.scenarios:
            try:
                resolve_scenario(name)
            except (ScenarioRefError, LookupError) as exc:
                raise ConfigError(str(exc)) from None
        declared = [m.name for m in adapter.modes]
        for mode in self.modes:
            if mode not in declared:
                raise ConfigError(
                    f"killpoint: unknown mode {mode!r} for runtime {self.runtime!r}; "
                    f"choose from {', '.join(declared)}"
                )
        self.point_kinds()
        if self.depth not in (1, 2):
            raise ConfigError(f"killpoint: depth {self.depth!r} is not 1 or 2")
        if self.workers < 1:
            raise ConfigError(f"killpoint: workers {self.workers!r} must be at least 1")
        if self.timeout <= 0:
            raise ConfigError(f"killpoint: timeout {self.timeout!r} must be positive seconds")
        if self.keep not in KEEP:
            raise ConfigError(f"killpoint: keep {self.keep!r}; choose from {', '.join(KEEP)}")
        try:
            Stores(self.store).check()
        except StoreError as exc:
            raise ConfigError(str(exc)) from None
        for folder in (self.work_root, self.work_parent):
            try:
                if folder is not None:
                    check_work_dir(folder)
            except OSError as exc:
                raise ConfigError(
                    f"killpoint: cannot keep cells in {str(folder)!r} ({exc}); "
                    "give a writable folder with --work-dir"
                ) from None

    def point_kinds(self) -> tuple[tuple[str, ...], int | None, list[CrashPoint]]:
        """(kinds to enumerate, random sample size, explicit points) from --points."""
        text = self.points.strip()
        if text.startswith("random:"):
            n = text.partition(":")[2]
            if not n.isdigit() or int(n) < 1:
                raise ConfigError(
                    f"killpoint: points {text!r}: give a sample size, e.g. 'random:20'"
                )
            return kinds.groups()["all"], int(n), []
        chosen: list[str] = []
        explicit: list[CrashPoint] = []
        for item in filter(None, (p.strip() for p in text.split(","))):
            if item in kinds.groups():
                chosen += kinds.groups()[item]
            elif item in kinds.REGISTRY:
                chosen.append(item)
            else:
                try:
                    explicit.append(CrashPoint.parse(item))
                except PointError:
                    raise ConfigError(
                        f"killpoint: points {item!r} is not a group ({', '.join(kinds.groups())}), "
                        f"a kind ({', '.join(kinds.names())}), 'random:N', or a point like "
                        "'after-checkpoint:2'"
                    ) from None
        if not chosen and not explicit:
            raise ConfigError(f"killpoint: points {self.points!r} selects nothing")
        return tuple(dict.fromkeys(chosen)), None, explicit

    def mode_names(self) -> tuple[str, ...]:
        """The modes asked for, or the runtime's runnable ones (its own names and order)."""
        return self.modes or runnable(load_adapter(self.runtime).modes)

    def scenario_names(self) -> tuple[str, ...]:
        return self.scenarios or tuple(scenarios.BUILTINS)


@dataclass
class Skipped:
    runtime: str
    scenario: str
    mode: str
    reason: str


@dataclass
class CampaignResult:
    config: CampaignConfig
    seed: int
    cells: list[CellResult] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    baselines: list[Baseline] = field(default_factory=list)
    seconds: float = 0.0
    interrupted: bool = False
    planned: int = 0

    @property
    def unexpected(self) -> list[CellResult]:
        return [c for c in self.cells if not c.expected]

    def summary(self) -> dict[str, Any]:
        by: dict[str, int] = {}
        for c in self.cells:
            by[c.verdict] = by.get(c.verdict, 0) + 1
        return {
            "cells": len(self.cells),
            "planned": self.planned,
            "unexpected": len(self.unexpected),
            "expected_losses": sum(1 for c in self.cells if c.verdict == "lost" and c.expected),
            "duplicates": sum(c.duplicates for c in self.cells),
            "duplicates_beyond_bound": sum(max(0, c.duplicates - c.bound) for c in self.cells),
            "by_verdict": by,
            "missed": by.get("missed", 0),
            "seconds": round(self.seconds, 3),
            "cells_per_second": round(len(self.cells) / self.seconds, 2) if self.seconds else 0.0,
        }


class Campaign:
    def __init__(self, config: CampaignConfig) -> None:
        self.config = config
        self.seed = config.seed if config.seed is not None else secrets.randbelow(2**31)
        self.engine = Engine(
            EngineConfig(
                store=config.store,
                timeout=config.timeout,
                keep=config.keep,
                work_root=config.work_root,
                work_parent=config.work_parent,
            )
        )
        self.store_kind = self.engine.stores.kind

    def rows(self) -> tuple[list[tuple[str, str, str, str]], list[Skipped]]:
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
        chosen, sample, explicit = self.config.point_kinds()
        row = (base.runtime, base.scenario, base.mode, base.store)
        if base.problem or base.nondeterministic:
            # The row cannot be planned; one cell carries its failure into the matrix.
            return [Cell(*row, schedule=(explicit or [CrashPoint("mid-model", 1)])[:1])]
        points = explicit + kinds.points_of(base, chosen)
        if sample is not None:
            rng = random.Random(f"{self.seed}/{'/'.join(row)}")
            points = sorted(rng.sample(points, min(sample, len(points))), key=CrashPoint.sort_key)
        schedules: list[tuple[CrashPoint, ...]] = [(p,) for p in points]
        if self.config.depth == 2:
            for p in points:
                if not p.kills:
                    continue
                try:
                    held = kinds.plan(base, p).checkpoints
                except PointError:
                    continue
                schedules += [
                    (p, CrashPoint("after-checkpoint", j))
                    for j in range(held + 1, base.checkpoints)
                ]
        return [Cell(*row, schedule=s) for s in schedules]

    def run(
        self,
        on_planned: Callable[[int], None] = lambda n: None,
        on_cell: Callable[[CellResult], None] = lambda r: None,
    ) -> CampaignResult:
        t0 = time.monotonic()
        result = CampaignResult(self.config, self.seed)
        rows, result.skipped = self.rows()
        pool = ThreadPoolExecutor(max_workers=self.config.workers, thread_name_prefix="cell")
        lock = threading.Lock()
        try:
            baselines = list(pool.map(self.engine.baseline, rows))
            result.baselines = baselines
            cells = [c for b in baselines for c in self.cells_for(b)]
            result.planned = len(cells)
            on_planned(len(cells))
            pending: set[Future[CellResult]] = {pool.submit(self.engine.run_cell, c) for c in cells}
            while pending:
                done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                for f in done:
                    try:
                        r = f.result()
                    except Interrupted:
                        continue
                    with lock:
                        result.cells.append(r)
                    on_cell(r)
        except KeyboardInterrupt:
            result.interrupted = True
            self.engine.stopping.set()
            kill_all()
            pool.shutdown(wait=True, cancel_futures=True)
            kill_all()
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
        order = {c.id: n for n, c in enumerate(sorted_cells(result.cells))}
        result.cells.sort(key=lambda c: order[c.id])
        result.seconds = time.monotonic() - t0
        return result


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
        return CrashPoint.parse(point).sort_key()
    except PointError:
        return (len(kinds.REGISTRY), 0, 0)  # a kind this version does not know: last


def sorted_cells(cells: list[CellResult]) -> list[CellResult]:
    def key(c: CellResult) -> tuple[Any, ...]:
        points = [_sort_key(p) for p in c.schedule]
        return (
            c.runtime,
            c.scenario,
            MODES.index(c.mode) if c.mode in MODES else len(MODES),
            c.mode,
            c.store,
            points,
        )

    return sorted(cells, key=key)
