"""What a long campaign costs the engine process: open descriptors and memory per cell.

    python -m tests.benchmarks.engine_footprint [--cells 1500] [--minutes 5] [--store URL]

Runs the default matrix (every scenario, mode and point of the reference runtime, SQLite
unless --store names a PostgreSQL server) in this process and prints, at cell 100 and at
the last cell (--cells, or as many as fit in --minutes), the engine's open descriptors
(and how many of them name deleted files) and its RSS, then the RSS growth per cell
between the two. Prints figures, asserts nothing.
Targets: descriptors flat; RSS growth under 5 KB per cell.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import time
from typing import Any

import psutil

from killpoint import processes
from killpoint.campaign import Campaign, CampaignConfig, default_workers

FIRST = 100


def descriptors() -> tuple[int, int]:
    """(open descriptors, those naming deleted files) of this process."""
    total = deleted = 0
    for name in os.listdir("/proc/self/fd"):
        total += 1
        try:
            if os.readlink(f"/proc/self/fd/{name}").endswith(" (deleted)"):
                deleted += 1
        except OSError:
            pass
    return total, deleted


def rss() -> int:
    return int(psutil.Process().memory_info().rss)


class Enough(KeyboardInterrupt):
    """The cells asked for have run: stop the campaign the way Ctrl-C does."""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cells", type=int, default=1500)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--store", default="sqlite")
    parser.add_argument("--workers", type=int, default=default_workers())
    args = parser.parse_args()

    config = CampaignConfig.from_options(store=args.store, workers=args.workers, keep="none")
    camp = Campaign(config)
    seen: dict[int, tuple[float, int, int, int]] = {}
    done = 0
    t0 = time.monotonic()

    def measure() -> tuple[float, int, int, int]:
        gc.collect()
        fds, deleted = descriptors()
        return (time.monotonic() - t0, fds, deleted, rss())

    def on_cell(result: Any) -> None:
        nonlocal done
        done += 1
        if done == FIRST:
            seen[FIRST] = measure()
        out_of_time = time.monotonic() - t0 > args.minutes * 60
        if done >= args.cells or (out_of_time and done > FIRST):
            seen[done] = measure()
            raise Enough()

    planned: list[int] = []
    try:
        result = camp.run(on_planned=planned.append, on_cell=on_cell)
    finally:
        processes.kill_all()
    if done not in seen and done >= FIRST:
        seen[done] = measure()
    print(f"default matrix: {planned[0] if planned else '?'} cells planned, {done} run "
          f"({len(result.cells)} kept in the result), {args.workers} workers, store {args.store}")  # fmt: skip
    for n, (t, fds, deleted, memory) in sorted(seen.items()):
        print(f"cell {n:>5} at {t:7.1f} s: {fds} descriptors ({deleted} of deleted files), "
              f"RSS {memory / 1024:,.0f} KB")  # fmt: skip
    if len(seen) >= 2:
        (a, (_, fa, _, ra)), (b, (_, fb, _, rb)) = sorted(seen.items())[0], sorted(seen.items())[-1]
        print(f"growth from cell {a} to cell {b}: {fb - fa:+d} descriptors, "
              f"RSS {(rb - ra) / (b - a) / 1024:+.2f} KB per cell (target < 5 KB)")  # fmt: skip
        held = sum(len(json.dumps(c.to_json())) for c in result.cells) / len(result.cells)
        print(f"the results the campaign keeps for its report: {held / 1024:.2f} KB of JSON "
              "per cell")  # fmt: skip
    else:
        print(f"fewer than {FIRST} cells ran: nothing to compare")


if __name__ == "__main__":
    main()
