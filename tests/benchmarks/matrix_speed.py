"""How fast the crash matrix runs: prints figures, asserts nothing.

    python -m tests.benchmarks.matrix_speed [--scenarios a,b] [--workers N]

In one run: the median milliseconds per cell of the matrix (default: the whole
default matrix on embedded SQLite), cells per second, the time of one fresh
interpreter start that imports the same modules a worker needs, and the ratio of
a cell to that start. Targets: a cell <= 0.1x an interpreter start; >= 20 cells/s
on 2 cores.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from harness.campaign import Campaign, CampaignConfig, CampaignResult, default_workers

WORKER_IMPORTS = (
    "import harness.worker, harness.adapters.reference, runtime, scenarios, openai, "
    "openai.types.responses, sqlalchemy, respx"
)


def interpreter_start(repeats: int = 3) -> float:
    """Seconds for a fresh interpreter to import what a worker imports (median)."""
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", WORKER_IMPORTS], check=True)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def timed_campaign(**options: Any) -> tuple[CampaignResult, float]:
    """Run a campaign in a throwaway folder; returns it and its wall time in seconds."""
    with tempfile.TemporaryDirectory(prefix="killpoint-bench-") as tmp:
        config = CampaignConfig(keep="none", work_root=Path(tmp), **options)
        config.validate()
        t0 = time.perf_counter()
        result = Campaign(config).run()
        return result, time.perf_counter() - t0


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default="", help="comma-separated (default: all)")
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--points", default="all")
    args = parser.parse_args()

    start = interpreter_start()
    result, wall = timed_campaign(
        scenarios=tuple(s for s in args.scenarios.split(",") if s),
        points=args.points,
        workers=args.workers,
    )
    cells = result.cells
    per_cell = statistics.median(c.seconds for c in cells)
    baselines = sum(b.seconds for b in result.baselines)
    print(f"cores                       {os.cpu_count()}  (workers {args.workers})")
    print(f"cells                       {len(cells)}  ({len(result.unexpected)} unexpected)")
    print(f"wall time                   {wall:.1f} s  (baselines {baselines:.1f} s of worker time)")
    print(f"median per cell             {per_cell * 1000:.0f} ms")
    print(f"cells per second            {len(cells) / wall:.1f}  (target >= 20 on 2 cores)")
    print(f"fresh interpreter start     {start * 1000:.0f} ms  (imports of a worker)")
    print(f"cell / interpreter start    {per_cell / start:.2f}  (target <= 0.1)")


if __name__ == "__main__":
    main()
