"""What a long campaign costs the engine process: open descriptors and memory per cell.

    python -m tests.benchmarks.engine_footprint [--cells 1500] [--minutes 5] [--store URL]
        [--no-trim] [--first 100] [--scenarios a,b] [--points P]

Runs the default matrix (every scenario, mode and point of the reference runtime, SQLite
unless --store names a PostgreSQL server) in this process and prints, at cell 100 (--first) and at
the last cell (--cells, or as many as fit in --minutes), the engine's open descriptors
(and how many of them name deleted files), its RSS and the blocks Python holds, then the
growth per cell between the two. --no-trim leaves the free heap pages to glibc
(harness/engine/heap_trim.py) to show what the trim is for. Then, side by side, what the finished cells cost as the campaign holds
them (a CellLog: heads plus compressed evidence) and as whole objects, and the engine's
RSS once the JSON and HTML reports are built (they hold every cell at once).
Prints figures, asserts nothing. Targets: descriptors flat; RSS growth under 5 KB per cell.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import sys
import time
import tracemalloc
from typing import Any

import psutil

from killpoint.engine.campaign import Campaign, CampaignConfig, default_workers
from killpoint.engine.cell_log import CellLog
from killpoint.report.document import dumps, to_document
from killpoint.report.html import render_report
from killpoint.workers import processes

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


def traced(build: Any) -> tuple[Any, int]:
    """What `build()` returns and the bytes it allocated that are still held."""
    gc.collect()
    tracemalloc.start()
    try:
        value = build()
        gc.collect()
        return value, tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()


def holding(result: Any) -> None:
    """The cells as the campaign holds them against the same cells as whole objects."""
    n = len(result.cells)
    # Each side decodes the cells afresh, so neither shares a finding with the other.
    whole, as_objects = traced(lambda: list(result.cells))
    _, as_log = traced(lambda: CellLog(list(result.cells)))
    print(f"the finished cells held: {as_log / n / 1024:.2f} KB per cell as a CellLog, "
          f"{as_objects / n / 1024:.2f} KB as whole objects ({as_objects / as_log:.1f}x)")  # fmt: skip
    whole.clear()
    gc.collect()
    before = rss()
    document = to_document(result, ["killpoint", "matrix"])
    text = dumps(document), render_report(document)
    after = rss()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(f"building the JSON ({len(text[0]) / 1024:,.0f} KB) and HTML "
          f"({len(text[1]) / 1024:,.0f} KB) reports: RSS {before / 1024:,.0f} -> "
          f"{after / 1024:,.0f} KB (peak so far {peak:,} KB)")  # fmt: skip


class Enough(KeyboardInterrupt):
    """The cells asked for have run: stop the campaign the way Ctrl-C does."""


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--cells", type=int, default=1500)
    parser.add_argument("--minutes", type=float, default=5.0)
    parser.add_argument("--store", default="sqlite")
    parser.add_argument("--workers", type=int, default=default_workers())
    parser.add_argument("--no-trim", action="store_true")
    parser.add_argument("--first", type=int, default=FIRST, help="the cell measured first")
    parser.add_argument("--scenarios", default="", help="comma-separated (default: all)")
    parser.add_argument("--points", default="all")
    args = parser.parse_args()

    config = CampaignConfig.from_options(
        store=args.store,
        workers=args.workers,
        keep="none",
        scenarios=args.scenarios or None,
        points=args.points,
    )
    first = args.first
    camp = Campaign(config)
    if args.no_trim:
        camp.trimmer.interval = float("inf")
    seen: dict[int, tuple[float, int, int, int, int]] = {}
    stopping: list[int] = []
    done = 0
    t0 = time.monotonic()

    def measure() -> tuple[float, int, int, int, int]:
        gc.collect()
        fds, deleted = descriptors()
        return (time.monotonic() - t0, fds, deleted, rss(), sys.getallocatedblocks())

    def on_cell(result: Any) -> None:
        nonlocal done
        done += 1
        if done == first:
            seen[first] = measure()
        out_of_time = time.monotonic() - t0 > args.minutes * 60
        if stopping:
            return  # a cell that ended while the campaign stopped: already past the limit
        if done >= args.cells or (out_of_time and done > first):
            seen[done] = measure()
            stopping.append(done)
            # Once only: the campaign hands over the cells that end while it stops.
            raise Enough()

    planned: list[int] = []
    try:
        result = camp.run(on_planned=planned.append, on_cell=on_cell)
    finally:
        processes.kill_all()
    if not stopping and done not in seen and done >= first:
        seen[done] = measure()
    print(f"default matrix: {planned[0] if planned else '?'} cells planned, {done} run "
          f"({len(result.cells)} kept in the result), {args.workers} workers, store {args.store}")  # fmt: skip
    trimmer = camp.trimmer
    print(f"heap trims: {trimmer.trims} in {trimmer.seconds * 1000:.0f} ms"
          + ("" if trimmer.available else " (no malloc_trim here)"))  # fmt: skip
    for n, (t, fds, deleted, memory, blocks) in sorted(seen.items()):
        print(f"cell {n:>5} at {t:7.1f} s: {fds} descriptors ({deleted} of deleted files), "
              f"RSS {memory / 1024:,.0f} KB, {blocks:,} Python blocks")  # fmt: skip
    if len(seen) >= 2:
        (a, (_, fa, _, ra, ba)), (b, (_, fb, _, rb, bb)) = min(seen.items()), max(seen.items())
        print(f"growth from cell {a} to cell {b}: {fb - fa:+d} descriptors, "
              f"RSS {(rb - ra) / (b - a) / 1024:+.2f} KB per cell (target < 5 KB), "
              f"{(bb - ba) / (b - a):+.1f} Python blocks per cell")  # fmt: skip
        held = sum(len(json.dumps(c.to_json())) for c in result.cells) / len(result.cells)
        print(f"the results the campaign keeps for its report: {held / 1024:.2f} KB of JSON "
              "per cell")  # fmt: skip
        holding(result)
    else:
        print(f"fewer than {first} cells ran: nothing to compare")


if __name__ == "__main__":
    main()
