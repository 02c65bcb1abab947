"""How fast LangGraph cells run: prints figures, asserts nothing.

    python -m tests.benchmarks.langgraph_speed [--scenarios research] [--modes sync,exit]
                                               [--workers N] [--points all]

Prints the median seconds per LangGraph cell (a crash and its resume: two forked
workers, three for double-resume) beside the time of one fresh interpreter that imports
LangGraph and runs one graph once (the `research` scenario against the scripted model,
SQLite, durability="sync"), measured in the same run, and their ratio. Target: ratio
<= 0.3, i.e. workers start warm: the forkserver has imported LangGraph and run the graph
once (harness/warm.py), so no cell pays LangGraph's first run.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from tests.benchmarks.matrix_speed import timed_campaign

# One graph, run once, in a fresh interpreter: what a cold worker would pay.
FRESH_RUN = """
import asyncio, sys
from pathlib import Path
from killpoint import scenarios
from killpoint.scenarios import Ledger, ScriptedModel, drive
from killpoint.adapters.langgraph.agent import LangGraphDriver

tmp = Path(sys.argv[1])
scenario = scenarios.get("research")
driver = LangGraphDriver(scenario, f"sqlite:///{tmp}/store.db", "sync", Ledger(tmp / "ledger", "research"))

async def main():
    with ScriptedModel(scenario.script, tmp / "model") as model:
        try:
            return await drive(scenario, driver, model, session_id="fresh")
        finally:
            await driver.aclose()

results = asyncio.run(main())
assert results[-1].status == "COMPLETED", results
"""


def fresh_run(repeats: int = 3) -> float:
    """Seconds for a fresh interpreter to import LangGraph and run one graph once (median)."""
    times = []
    for _ in range(repeats):
        with tempfile.TemporaryDirectory(prefix="killpoint-langgraph-fresh-") as tmp:
            t0 = time.perf_counter()
            subprocess.run(
                [sys.executable, "-c", FRESH_RUN, tmp],
                check=True,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scenarios", default="research", help="comma-separated")
    parser.add_argument("--modes", default="sync,exit", help="comma-separated")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--points", default="all")
    parser.add_argument("--store", default="sqlite")
    args = parser.parse_args()

    fresh = fresh_run()
    result, wall = timed_campaign(
        runtime="langgraph",
        scenarios=tuple(s for s in args.scenarios.split(",") if s),
        modes=tuple(m for m in args.modes.split(",") if m),
        points=args.points,
        workers=args.workers,
        store=args.store,
    )
    cells = result.cells
    per_cell = statistics.median(c.seconds for c in cells)
    baselines = sum(b.seconds for b in result.baselines)
    load = os.getloadavg()[0]
    print(f"cores                                 {os.cpu_count()}  (workers {args.workers})")
    print(f"load average (1 min)                  {load:.1f}")
    print(
        f"cells                                 {len(cells)}  ({len(result.unexpected)} unexpected)"
    )
    print(f"wall time                             {wall:.1f} s  (baselines {baselines:.1f} s)")
    print(f"median per LangGraph cell             {per_cell:.3f} s")
    print(f"fresh interpreter, LangGraph, 1 run   {fresh:.3f} s")
    print(f"cell / fresh run                      {per_cell / fresh:.2f}  (target <= 0.3)")


if __name__ == "__main__":
    main()
