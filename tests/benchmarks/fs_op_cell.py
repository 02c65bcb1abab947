"""An fs-op cell against a boundary kill cell of the same row, side by side in one run:
the same scenario and mode, `--points fs-op` (a store on the FUSE mount, the worker killed
before one file-system operation) and `--points after-checkpoint` (a plain SIGKILL at a
checkpoint's gate), each a campaign of its own on one engine's machine.

    python -m tests.benchmarks.fs_op_cell [--scenario research] [--mode tool-batch]
                                          [--fs-ops 4] [--workers 2]

Prints each campaign's cells, its wall time (baselines included: an fs-op row's baselines
run on the mount) and its median cell, and the ratio of the medians. Asserts nothing.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time

from killpoint.engine.campaign import Campaign
from killpoint.engine.options import CampaignConfig
from killpoint.engine.work_root import default_parent
from killpoint.powerloss import available, stop_helper
from killpoint.workers.processes import stop_forkserver


def campaign(points: str, args: argparse.Namespace) -> tuple[int, int, float, float]:
    """Cells, unexpected cells, the campaign's wall seconds (its baselines included) and
    the median cell's seconds (a crash and its resume, the cells running at once)."""
    with tempfile.TemporaryDirectory(prefix="killpoint-fsop-", dir=default_parent()) as tmp:
        config = CampaignConfig.from_options(
            scenarios=(args.scenario,), modes=(args.mode,), points=points, fs_ops=args.fs_ops,
            workers=args.workers, keep="none", work_dir=tmp,
        )  # fmt: skip
        config.check()
        t0 = time.perf_counter()
        result = Campaign(config).run()
        wall = time.perf_counter() - t0
        median = statistics.median(c.seconds for c in result.cells) if result.cells else 0.0
        return len(result.cells), len(result.unexpected), wall, median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenario", default="research")
    parser.add_argument("--mode", default="tool-batch")
    parser.add_argument("--fs-ops", default="4", help="fs-op points per checkpoint")
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args()
    reason = available()
    if reason is not None:
        print(f"skipped: the power-loss filesystem does not mount here: {reason}")
        return
    try:
        campaign("after-checkpoint:1", args)  # warm: imports, the forkserver, the mount helper
        rows = [("after-checkpoint", *campaign("after-checkpoint", args)),
                ("fs-op", *campaign("fs-op", args))]  # fmt: skip
    finally:
        stop_helper()
        stop_forkserver()
    print(f"{'points':<18} {'cells':>6} {'unexpected':>11} {'wall s':>8} {'median cell ms':>15}")
    per = {}
    for name, cells, bad, wall, median in rows:
        per[name] = median
        print(f"{name:<18} {cells:>6} {bad:>11} {wall:>8.1f} {median * 1000:>15.0f}")
    ratio = per["fs-op"] / per["after-checkpoint"]
    print(f"fs-op cell / kill cell {ratio:.2f}x  (median cell; the wall includes the baselines)")


if __name__ == "__main__":
    main()
