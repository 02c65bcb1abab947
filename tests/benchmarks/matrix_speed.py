"""How fast the crash matrix runs: prints figures, asserts nothing.

    python -m tests.benchmarks.matrix_speed [--scenarios a,b] [--workers N] [--points P]

In one run: cells per second of the matrix (default: the whole default matrix on
embedded SQLite), the median wall time of a cell (with the campaign's cells running at
once, and, for `research`'s cells, one at a time), the CPU time a cell costs (engine, forkserver, and forked workers, summed over
the campaign and divided by its cells), the time of one fresh interpreter start that
imports what a worker imports, and the ratios of a cell to that start. Beside them, the
runs' own work per cell (tests/benchmarks/runtime_floor.py: the runtime and the scripted
model answering it): the CPU a cell would cost if forking, crashing and checking cost
nothing, and so the most cells per second this runtime allows.
Targets: a cell <= 0.1x an interpreter start; >= 20 cells/s on 2 cores.
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
    args = parser.parse_args()

    start = interpreter_start(args.repeats)
    warm = start_forkserver_for(args.runtime)
    costs: dict[tuple[str, str], float] = {}

    def measure_runs(campaign: Campaign) -> None:
        rows, _ = campaign.rows()
        costs.update(run_costs(args.runtime, ((s, m) for _, s, m, _ in rows)))

    result, wall, cpu = measured_campaign(
        measure_runs,
        runtime=args.runtime,
        scenarios=tuple(s for s in args.scenarios.split(",") if s),
        points=args.points,
        workers=args.workers,
    )
    # A cell's own latency: the same kind of cell, one at a time, as the interpreter start
    # it is compared with is timed (the campaign above shares the cores between cells).
    alone, _, _ = measured_campaign(
        runtime=args.runtime, scenarios=("research",), points=args.points, workers=1
    )
    per_cell_alone = statistics.median(c.seconds for c in alone.cells)
    cells = result.cells
    n = len(cells)
    per_cell = statistics.median(c.seconds for c in cells)
    cpu_cell = sum(cpu.values()) / n
    split = ", ".join(f"{k} {v / n * 1000:.0f}" for k, v in cpu.items())
    floor = floor_per_cell(costs, ((c.scenario, c.mode) for c in cells))
    cores = os.cpu_count() or 1
    print(f"cores                       {cores}  ({args.workers} cells at once)")
    print(f"cells                       {n}  ({len(result.unexpected)} unexpected)")
    print(f"wall time                   {wall:.1f} s  (baselines included; not the forkserver's")
    print(f"                            start and warm-up, once per process: {warm:.1f} s)")
    print(f"cells per second            {n / wall:.1f}  (target >= 20 on 2 cores)")
    print(f"median cell, wall           {per_cell * 1000:.0f} ms  ({args.workers} at once)")
    print(f"CPU per cell                {cpu_cell * 1000:.0f} ms  ({split})")
    print(
        f"runs' own work              {floor * 1000:.0f} ms CPU per cell  (one uninterrupted run per"
    )
    print("                            cell, in process and warm: about the least a cell can cost)")
    print(f"  so at best                {cores / floor:.1f} cells/s on {cores} cores")
    print(
        f"harness's share             {(cpu_cell - floor) * 1000:.0f} ms CPU per cell  (forks, crashes,"
    )
    print("                            checks, comparison: CPU per cell minus the runs' work)")
    print(f"fresh interpreter start     {start * 1000:.0f} ms  (imports of a worker)")
    print(f"median cell / start         {per_cell / start:.2f}  (target <= 0.1)")
    print(
        f"median cell alone / start   {per_cell_alone / start:.2f}  ({per_cell_alone * 1000:.0f} ms:"
        f" the {len(alone.cells)} cells of `research`, one at a time)"
    )
    print(f"CPU per cell / start        {cpu_cell / start:.2f}")


if __name__ == "__main__":
    main()
