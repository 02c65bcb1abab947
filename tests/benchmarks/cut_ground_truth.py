"""The cut models' ground truth on SQLite: each journal mode and `synchronous` level, cut
under each model over a run of seeds, and what the images held, as a Markdown table.

    python -m tests.benchmarks.cut_ground_truth [--seeds 10] [--cases WAL:FULL,DELETE:OFF]
        [--models synced,torn-seq]

Each image is one run of tests/harness/powerloss/sqlite_workload.py: a base at EXTRA
(checkpointed in WAL mode), then 4 commits at the level under test, all acknowledged,
then the worker killed and the mount cut. A cell of the table counts the images that
kept every commit (durable), lost some but were sound (lost), or were not sound
(corrupt: integrity_check failed, the file could not be read, or a commit was there in
part), and gives the commits the lost ones held.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from collections import Counter
from pathlib import Path

from killpoint.engine.work_root import default_parent
from killpoint.powerloss import available, stop_helper
from killpoint.powerloss.cut_models import parse_cut
from tests.harness.powerloss.sqlite_workload import CORRUPT, DURABLE, LOST, run_and_cut

CASES = (
    "WAL:FULL,WAL:NORMAL,WAL:OFF,TRUNCATE:FULL,DELETE:EXTRA,DELETE:FULL,DELETE:NORMAL,DELETE:OFF"
)
MODELS = "synced,torn-op,torn-op:byte,torn-seq,reorder"


def _commits(kept: tuple[int, ...]) -> str:
    """`0-3` for the first four commits, `0` for the base alone, else the list."""
    if not kept:
        return "none"
    if kept == tuple(range(len(kept))):
        return "0" if len(kept) == 1 else f"0-{kept[-1]}"
    return ",".join(map(str, kept))


def cell_text(verdicts: Counter[str], kept: Counter[tuple[int, ...]]) -> str:
    parts = [f"{verdicts[v]} {v}" for v in (DURABLE, LOST, CORRUPT) if verdicts[v]]
    held = ", ".join(_commits(c) for c, _ in kept.most_common())
    return ", ".join(parts) + (f" (held {held})" if held else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--cases", default=CASES)
    parser.add_argument("--models", default=MODELS)
    args = parser.parse_args()
    why = available()
    if why is not None:
        print(f"skipped: {why}")
        return
    models = args.models.split(",")
    t0 = time.perf_counter()
    print("| journal | synchronous | " + " | ".join(f"`{m}`" for m in models) + " |")
    print("| --- | --- | " + " | ".join("---" for _ in models) + " |")
    try:
        with tempfile.TemporaryDirectory(prefix="killpoint-cuts-", dir=default_parent()) as tmp:
            for case in args.cases.split(","):
                journal, _, synchronous = case.partition(":")
                cells = []
                for model in models:
                    verdicts: Counter[str] = Counter()
                    kept: Counter[tuple[int, ...]] = Counter()
                    for seed in range(args.seeds):
                        folder = Path(tmp) / f"{journal}-{synchronous}-{model}-{seed}"
                        folder.mkdir()
                        o = run_and_cut(folder, journal, synchronous, parse_cut(model, seed))
                        verdicts[o.verdict] += 1
                        if o.verdict == LOST:
                            kept[tuple(sorted(o.commits))] += 1
                    cells.append(cell_text(verdicts, kept))
                print(f"| {journal} | {synchronous} | " + " | ".join(cells) + " |", flush=True)
    finally:
        stop_helper()
    print(f"\n{args.seeds} seed(s) per cell, {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
