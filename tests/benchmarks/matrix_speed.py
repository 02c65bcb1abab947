"""How fast the crash matrix runs, on each path (`--kills real`, `--kills fast`) in one
run: prints figures, asserts nothing.

    python -m tests.benchmarks.matrix_speed [--scenarios a,b] [--workers N] [--points P]
                                            [--kills real,fast] [--repeats 3]

For each path, one after the other on the same plan (default: the whole default matrix on
embedded SQLite): cells per second, the median wall time of a cell (the campaign's cells
running at once), the CPU time a cell costs (engine, forkserver, and forked workers, summed
over the campaign and divided by its cells) and how many cells resumed from a row's traced
copy. Beside them, the runs' own work per cell (tests/benchmarks/runtime_floor.py: the
runtime and the scripted model answering it, one uninterrupted run per cell): the CPU a
cell would cost if forking, crashing and checking cost nothing, and so the most cells per
second this runtime allows; the harness's share is the CPU per cell minus that work. And
the time of one fresh interpreter start that imports what a worker imports.
Targets (issue 32): the harness's share <= 1x the runs' own work; fast >= 2x real cells/s.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil

from killpoint.adapters.registry import load_adapter
from killpoint.engine.campaign import Campaign, CampaignConfig, CampaignResult, default_workers
from killpoint.engine.work_root import default_parent
from killpoint.workers import processes
from tests.benchmarks.runtime_floor import floor_per_cell, run_costs

WORKER_IMPORTS = (
    "import killpoint.workers.worker, killpoint.adapters.reference, killpoint.runtime, "
    "killpoint.scenarios, openai, openai.types.responses, sqlalchemy, respx"
)


def interpreter_start(repeats: int = 3) -> float:
    """Seconds for a fresh interpreter to import what a worker imports (median).

    Modules load from a bytecode cache (a throwaway one, primed by one run first), even
    where PYTHONDONTWRITEBYTECODE is set: the usual cost of a start, not a first one."""
    with tempfile.TemporaryDirectory(prefix="killpoint-pycache-") as cache:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPYCACHEPREFIX"] = cache
        subprocess.run([sys.executable, "-c", WORKER_IMPORTS], check=True, env=env)
        times = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            subprocess.run([sys.executable, "-c", WORKER_IMPORTS], check=True, env=env)
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


class CpuMeter:
    """CPU seconds of this process (all its threads: the engine) and of the forkserver,
    itself and its reaped children (the workers), between start() and stop()."""

    def start(self) -> None:
        self._engine0 = self._engine()
        self._fork0 = self._forkserver()

    def stop(self) -> dict[str, float]:
        engine, (own, workers) = self._engine(), self._forkserver()
        return {
            "engine": engine - self._engine0,
            "forkserver": own - self._fork0[0],
            "workers": workers - self._fork0[1],
        }

    @staticmethod
    def _engine() -> float:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    @staticmethod
    def _forkserver() -> tuple[float, float]:
        for child in psutil.Process().children():
            if "multiprocessing.forkserver" in " ".join(child.cmdline()):
                t = child.cpu_times()
                return t.user + t.system, t.children_user + t.children_system
        return 0.0, 0.0


def timed_campaign(**options: Any) -> tuple[CampaignResult, float]:
    """Run a campaign in a throwaway folder; returns it and its wall time in seconds."""
    result, wall, _ = measured_campaign(**options)
    return result, wall


def start_forkserver() -> float:
    """Start the forkserver and wait until it has preloaded and warmed up (it forks its
    first child only then); returns the seconds that took."""
    t0 = time.perf_counter()
    child = processes.context().Process(target=os._exit, args=(0,))
    child.start()
    child.join()
    return time.perf_counter() - t0


def start_forkserver_for(runtime: str) -> float:
    """start_forkserver(), preloading `runtime`."""
    processes.context(getattr(load_adapter(runtime), "preload_modules", ()))
    return start_forkserver()


def measured_campaign(
    before: Callable[[Campaign], object] = lambda campaign: None, **options: Any
) -> tuple[CampaignResult, float, dict[str, float]]:
    """A campaign in a throwaway folder: its result, wall seconds and CPU seconds by part.
    The forkserver's start and warm-up (once per process) come first, unmeasured, then
    `before(campaign)`."""
    with tempfile.TemporaryDirectory(prefix="killpoint-bench-", dir=default_parent()) as tmp:
        config = CampaignConfig(keep="none", work_root=Path(tmp), **options)
        config.validate()
        campaign = Campaign(config)
        campaign.engine.adapter(config.runtime)  # picks what the forkserver preloads
        start_forkserver()
        before(campaign)
        meter = CpuMeter()
        meter.start()
        t0 = time.perf_counter()
        result = campaign.run()
        wall = time.perf_counter() - t0
        return result, wall, meter.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default="", help="comma-separated (default: all)")
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--points", default="all")
    parser.add_argument("--runtime", default="reference")
    parser.add_argument("--repeats", type=int, default=3, help="interpreter starts (median)")
    parser.add_argument(
        "--kills", default="real,fast", help="the paths measured, in this order (real, fast)"
    )
    args = parser.parse_args()
    paths = [k for k in args.kills.split(",") if k]

    start = interpreter_start(args.repeats)
    warm = start_forkserver_for(args.runtime)
    costs: dict[tuple[str, str], float] = {}

    def measure_runs(campaign: Campaign) -> None:
        if not costs:
            rows, _ = campaign.rows()
            costs.update(run_costs(args.runtime, ((s, m) for _, s, m, _ in rows)))

    runs: dict[str, tuple[CampaignResult, float, dict[str, float]]] = {}
    for kills in paths:
        runs[kills] = measured_campaign(
            measure_runs,
            runtime=args.runtime,
            scenarios=tuple(s for s in args.scenarios.split(",") if s),
            points=args.points,
            workers=args.workers,
            kills=kills,
        )
    cores = os.cpu_count() or 1
    first = runs[paths[0]][0]
    n = len(first.cells)
    floor = floor_per_cell(costs, ((c.scenario, c.mode) for c in first.cells))
    print(f"cores                       {cores}  ({args.workers} cells at once)")
    print(f"cells                       {n}  (the same plan on each path)")
    print(f"forkserver start and warm-up {warm:.1f} s  (once per process, not in the figures)")
    print(
        f"runs' own work              {floor * 1000:.0f} ms CPU per cell  (one uninterrupted run per"
    )
    print("                            cell, in process and warm: about the least a cell can cost)")
    print(f"  so at best                {cores / floor:.1f} cells/s on {cores} cores")
    print(f"fresh interpreter start     {start * 1000:.0f} ms  (imports of a worker)")
    print("")
    print(f"{'':<28}" + "".join(f"{'--kills ' + k:>16}" for k in paths))

    def row(label: str, values: list[str]) -> None:
        print(f"{label:<28}" + "".join(f"{v:>16}" for v in values))

    figures: dict[str, dict[str, float]] = {}
    for kills, (result, wall, cpu) in runs.items():
        cells = result.cells
        count = len(cells)
        cpu_cell = sum(cpu.values()) / count
        traced = sum(1 for c in cells if any("traced worker (pid" in e.text for e in c.timeline))
        figures[kills] = {
            "cells": count,
            "unexpected": len(result.unexpected),
            "traced": traced,
            "wall": wall,
            "cells/s": count / wall,
            "cell": statistics.median(c.seconds for c in cells),
            "cpu": cpu_cell,
            **{part: v / count for part, v in cpu.items()},
            "share": cpu_cell - floor,
        }
    f = [figures[k] for k in paths]
    row("cells (unexpected)", [f"{x['cells']:.0f} ({x['unexpected']:.0f})" for x in f])
    row("cells from a traced copy", [f"{x['traced']:.0f}" for x in f])
    row("wall time, s", [f"{x['wall']:.1f}" for x in f])
    row("cells per second", [f"{x['cells/s']:.2f}" for x in f])
    row("median cell, ms", [f"{x['cell'] * 1000:.0f}" for x in f])
    row("CPU per cell, ms", [f"{x['cpu'] * 1000:.0f}" for x in f])
    for part in ("engine", "forkserver", "workers"):
        row(f"  {part}", [f"{x[part] * 1000:.0f}" for x in f])
    row("harness's share, ms", [f"{x['share'] * 1000:.0f}" for x in f])
    row("  / runs' own work", [f"{x['share'] / floor:.2f}x" for x in f])
    row("CPU per cell / start", [f"{x['cpu'] / start:.2f}" for x in f])
    print(
        "(harness's share: CPU per cell minus the runs' own work: forks, kills, copies, "
        "checks, comparison; target <= 1x)"
    )
    if "real" in figures and "fast" in figures:
        ratio = figures["fast"]["cells/s"] / figures["real"]["cells/s"]
        print(f"fast / real cells per second {ratio:.2f}x  (target >= 2x)")
    for kills, (result, _, _) in runs.items():
        # A figure is only as good as its run: name what was unexpected, to replay it.
        for c in result.unexpected[:5]:
            print(f"unexpected on --kills {kills}: {c.id} ({c.verdict}: {c.detail[:160]})")
    unequal = [k for k in paths if figures[k]["cells"] != n]
    if unequal:
        print(f"the paths ran different numbers of cells: {', '.join(unequal)}")


if __name__ == "__main__":
    main()
