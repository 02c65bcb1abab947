"""How fast agno cells run: prints figures, asserts nothing.

    python -m tests.benchmarks.agno_speed [--scenarios research] [--modes tool-batch,runs]
                                          [--workers N] [--points all]

Prints the median seconds per agno cell (a crash and its resume: two forked workers)
beside the time of one fresh interpreter that imports agno and runs one agent once
(the `research` scenario against the scripted model, SQLite, checkpoint="tool-batch"),
and their ratio. Target: ratio <= 0.3, i.e. workers start warm: the forkserver has
imported agno and run it once (harness/workers/warm.py), so no cell pays agno's first run.
"""

from __future__ import annotations

import argparse
import os

from tests.benchmarks.matrix_speed import timed_campaign
from tests.benchmarks.warm_start import fresh_run, print_figures

# One agent, run once, in a fresh interpreter: what a cold worker would pay.
FRESH_RUN = """
import asyncio, sys
from pathlib import Path
from killpoint import scenarios
from killpoint.scenarios import Ledger, ScriptedModel, drive
from killpoint.adapters.agno.driver import AgnoDriver

tmp = Path(sys.argv[1])
scenario = scenarios.get("research")
driver = AgnoDriver(scenario, f"sqlite:///{tmp}/store.db", "tool-batch", Ledger(tmp / "ledger", "research"))
with ScriptedModel(scenario.script, tmp / "model") as model:
    results = asyncio.run(drive(scenario, driver, model, session_id="fresh"))
assert results[-1].status == "COMPLETED", results
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--scenarios", default="research", help="comma-separated")
    parser.add_argument("--modes", default="tool-batch,runs", help="comma-separated")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--points", default="all")
    parser.add_argument("--repeats", type=int, default=3, help="fresh interpreters (median)")
    parser.add_argument("--runtime", default="agno", help="agno, or an agno adapter path")
    args = parser.parse_args()

    fresh = fresh_run(FRESH_RUN, "agno", env={"AGNO_TELEMETRY": "false"}, repeats=args.repeats)
    result, wall = timed_campaign(
        runtime=args.runtime,
        scenarios=tuple(s for s in args.scenarios.split(",") if s),
        modes=tuple(m for m in args.modes.split(",") if m),
        points=args.points,
        workers=args.workers,
    )
    print_figures("agno", args.workers, result, wall, fresh)


if __name__ == "__main__":
    main()
