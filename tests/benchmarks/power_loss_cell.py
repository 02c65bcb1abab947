"""A power-loss cell against a kill cell of the same scenario, side by side: the same
checkpoint K, `power-loss:K` (store on the FUSE mount, cut, unmount, resume on the image)
and `after-checkpoint:K` (a plain SIGKILL), alternating so the machine's load hits both.

    python -m tests.benchmarks.power_loss_cell [--scenarios research,long-chain] [--repeats 7]

Target: a power-loss cell at most 3x a kill cell (issue 17). Prints each scenario's
medians and ratio, and the ratio of the session's-end point (`power-loss:last`, which
runs the whole session before the cut) to the kill cell at K.
"""

from __future__ import annotations

import statistics
import tempfile
import time
from pathlib import Path

from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig
from killpoint.engine.work_root import default_parent
from killpoint.powerloss import stop_helper
from killpoint.values.cell import Cell
from killpoint.values.points import CrashPoint
from killpoint.workers.processes import stop_forkserver
from tests.benchmarks import power_loss_options

TARGET = 3.0


def timed(engine: Engine, cell: Cell) -> float:
    t0 = time.perf_counter()
    result = engine.run_cell(cell)
    seconds = time.perf_counter() - t0
    if not result.expected:
        raise SystemExit(f"{cell.id}: {result.verdict}: {result.detail}")
    return seconds


def main() -> None:
    args = power_loss_options.parse(__doc__.splitlines()[0])
    if args is None:
        return
    print(f"{'scenario':<14} {'K':>3} {'kill ms':>8} {'power-loss ms':>14} {'ratio':>6} "
          f"{'end ms':>7} {'end ratio':>9}")  # fmt: skip
    worst = 0.0
    try:
        with tempfile.TemporaryDirectory(prefix="killpoint-plcell-", dir=default_parent()) as tmp:
            engine = Engine(EngineConfig(work_root=Path(tmp), keep="none"))
            for scenario in args.scenarios.split(","):
                row = ("reference", scenario, args.mode, "sqlite")
                base = engine.baseline(row)
                k = max(1, base.checkpoints // 2)
                kill = Cell(*row, schedule=(CrashPoint("after-checkpoint", k),))
                cut = Cell(*row, schedule=(CrashPoint("power-loss", k),))
                end = Cell(*row, schedule=(CrashPoint("power-loss", base.checkpoints),))
                for c in (kill, cut, end):  # warm: imports, the forkserver, the mount helper
                    timed(engine, c)
                kills, cuts, ends = [], [], []
                for _ in range(args.repeats):
                    kills.append(timed(engine, kill))
                    cuts.append(timed(engine, cut))
                    ends.append(timed(engine, end))
                a, b, e = (statistics.median(x) for x in (kills, cuts, ends))
                worst = max(worst, b / a, e / a)
                print(f"{scenario:<14} {k:>3} {a * 1000:>8.0f} {b * 1000:>14.0f} {b / a:>5.2f}x "
                      f"{e * 1000:>7.0f} {e / a:>8.2f}x")  # fmt: skip
    finally:
        stop_helper()
        stop_forkserver()
    verdict = "within" if worst <= TARGET else "OVER"
    print(f"worst ratio {worst:.2f}x: {verdict} the {TARGET:.0f}x target")


if __name__ == "__main__":
    main()
