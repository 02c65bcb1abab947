"""What the adapter speed benchmarks share: a cold run timed in a fresh interpreter, and
the figures that compare a warm cell with it (agno_speed, langgraph_speed)."""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping
from typing import Any


def fresh_run(
    script: str, name: str, env: Mapping[str, str] | None = None, repeats: int = 3
) -> float:
    """Median seconds for a fresh interpreter to run `script` (given a temporary folder
    as its argument): what a cold worker would pay for its first run."""
    times = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix=f"killpoint-{name}-fresh-") as tmp:
            t0 = time.perf_counter()
            subprocess.run(
                [sys.executable, "-c", script, tmp],
                check=True,
                env=None if env is None else {**os.environ, **env},
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def print_figures(label: str, workers: int, result: Any, wall: float, fresh: float) -> None:
    """The campaign's median cell beside the fresh run, and their ratio (target <= 0.3)."""
    if not result.cells:
        print(f"no {label} cell ran: nothing to compare (try other --modes or --points)")
        return
    per_cell = statistics.median(c.seconds for c in result.cells)
    baselines = sum(b.seconds for b in result.baselines)
    rows = [
        ("cores", f"{os.cpu_count()}  (workers {workers})"),
        ("load average (1 min)", f"{os.getloadavg()[0]:.1f}"),
        ("cells", f"{len(result.cells)}  ({len(result.unexpected)} unexpected)"),
        ("wall time", f"{wall:.1f} s  (baselines {baselines:.1f} s)"),
        (f"median per {label} cell", f"{per_cell:.3f} s"),
        (f"fresh interpreter, {label}, 1 run", f"{fresh:.3f} s"),
        ("cell / fresh run", f"{per_cell / fresh:.2f}  (target <= 0.3)"),
    ]
    width = max(len(name) for name, _ in rows) + 3
    for name, value in rows:
        print(f"{name:<{width}}{value}")
