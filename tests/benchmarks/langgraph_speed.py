"""How fast LangGraph cells run: prints figures, asserts nothing.

    python -m tests.benchmarks.langgraph_speed [--scenarios research] [--modes sync,exit]
                                               [--workers N] [--points all]

Prints the median seconds per LangGraph cell (a crash and its resume: two forked
workers, three for double-resume) beside the time of one fresh interpreter that imports
LangGraph and runs one graph once (the `research` scenario against the scripted model,
SQLite, durability="sync"), measured in the same run, and their ratio. Target: ratio
<= 0.3, i.e. workers start warm: the forkserver has imported LangGraph and run the graph
once (harness/workers/warm.py), so no cell pays LangGraph's first run.
"""

from __future__ import annotations

import argparse
import os

from tests.benchmarks.matrix_speed import timed_campaign
from tests.benchmarks.warm_start import fresh_run, print_figures

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


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scenarios", default="research", help="comma-separated")
    parser.add_argument("--modes", default="sync,exit", help="comma-separated")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--points", default="all")
    parser.add_argument("--repeats", type=int, default=3, help="fresh interpreters (median)")
    parser.add_argument("--store", default="sqlite")
    args = parser.parse_args()

    fresh = fresh_run(FRESH_RUN, "langgraph", repeats=args.repeats)
    result, wall = timed_campaign(
        runtime="langgraph",
        scenarios=tuple(s for s in args.scenarios.split(",") if s),
        modes=tuple(m for m in args.modes.split(",") if m),
        points=args.points,
        workers=args.workers,
        store=args.store,
    )
    print_figures("LangGraph", args.workers, result, wall, fresh)


if __name__ == "__main__":
    main()
