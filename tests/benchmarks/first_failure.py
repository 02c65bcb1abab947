"""How soon a campaign says "this runtime breaks durability": for each broken reference
runtime, seconds until its first unexpected cell with the plan's order and with the
informative one, and whether a time budget finds one. Prints figures, asserts nothing.

    python -m tests.benchmarks.first_failure [--runtimes a,b] [--scenarios a,b]
        [--modes m] [--points P] [--workers N] [--budget 60s] [--seed S]
        [--matrix-seconds S]

Each runtime is a variant of the reference runtime with one defect planted
(tests/harness/broken_runtimes.py, VARIANTS by default). For each, on the same plan and
seed: a campaign in the plan's order (`--order plan`: row after row, as before cells were
ordered) and one in the informative order (the default), each with --fail-fast, timed
from the campaign's start to the moment its first unexpected cell was recorded; then a
campaign with --budget (informative order), which finds the defect when it records an
unexpected cell before its budget is spent. The full matrix's wall time, against which
"within 10%" is read, is the reference runtime's whole campaign on the same plan (or
--matrix-seconds, measured elsewhere).
Target (issue 53): every first unexpected cell within 10% of the full matrix's wall time
in the informative order, and the budget of 60 s catches each.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from killpoint.engine.campaign import Campaign, CampaignConfig, CampaignResult
from killpoint.engine.option_values import duration
from killpoint.engine.work_root import default_parent
from killpoint.values.cell import CellResult
from tests.harness.broken_runtimes import VARIANTS

MODULE = "tests.harness.broken_runtimes"


@dataclass
class FirstFailure:
    """A recorder (killpoint.engine.campaign.Recorder) that notes when the first unexpected
    cell was recorded, in seconds from its start."""

    started: float
    seconds: float | None = None
    cell: str | None = None

    def planned(self, result: CampaignResult) -> None:
        pass

    def finished(self, cell: CellResult) -> None:
        if self.seconds is None and cell.failing:
            self.seconds, self.cell = time.monotonic() - self.started, cell.id


def campaign(**options: Any) -> tuple[CampaignResult, FirstFailure, float]:
    """One campaign in a throwaway folder: its result, its first failure, its wall time."""
    with tempfile.TemporaryDirectory(prefix="killpoint-first-", dir=default_parent()) as tmp:
        config = CampaignConfig.from_options(keep="none", work_root=tmp, **options)
        config.check()
        camp = Campaign(config)
        t0 = time.monotonic()
        first = FirstFailure(t0)
        result = camp.run(recorder=first)
        return result, first, time.monotonic() - t0


def shown(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds:.1f}"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runtimes", default=",".join(VARIANTS), help="variants of " + MODULE)
    parser.add_argument("--scenarios", default=None, help="comma-separated (default: all)")
    parser.add_argument("--modes", default=None)
    parser.add_argument("--points", default=None)
    parser.add_argument("--workers", default=None)
    parser.add_argument("--budget", default="60s", help="the budget campaign's (60s)")
    parser.add_argument("--seed", type=int, default=53)
    parser.add_argument(
        "--matrix-seconds", type=float, default=None, help="the full matrix's wall time"
    )
    args = parser.parse_args(argv)
    budget = duration("budget", args.budget)
    plan = {
        k: v
        for k, v in {
            "scenarios": args.scenarios,
            "modes": args.modes,
            "points": args.points,
            "workers": args.workers,
            "seed": args.seed,
        }.items()
        if v is not None
    }
    if args.matrix_seconds is None:
        whole, _, matrix = campaign(**plan)
        print(f"full matrix (reference)     {matrix:.1f} s, {len(whole.cells)} cells")
    else:
        matrix = args.matrix_seconds
        print(f"full matrix (given)         {matrix:.1f} s")
    print(f"budget                      {budget:g} s")
    print(f"options                     {' '.join(f'{k}={v}' for k, v in plan.items())}")
    print("")
    print(f"{'runtime':<24}{'plan, s':>10}{'new, s':>10}{'new / matrix':>14}{'budget':>10}")
    for name in (n for n in args.runtimes.split(",") if n):
        runtime = f"{MODULE}:{name}"
        _, old, _ = campaign(runtime=runtime, order="plan", fail_fast=True, **plan)
        _, new, _ = campaign(runtime=runtime, order="informative", fail_fast=True, **plan)
        boxed, _, _ = campaign(runtime=runtime, budget=budget, **plan)
        caught = "caught" if boxed.unexpected else "missed"
        share = "-" if new.seconds is None else f"{100 * new.seconds / matrix:.1f}%"
        print(f"{name:<24}{shown(old.seconds):>10}{shown(new.seconds):>10}{share:>14}{caught:>10}")
        if new.cell is not None:
            print(f"  first (new order): {new.cell}")


if __name__ == "__main__":
    main()
