"""What checking a crash-state corpus costs per state, beside a matrix cell: prints
figures, asserts nothing.

    python -m tests.benchmarks.corpus_check_cost [--scenarios a,b] [--modes m,n] [--points P] [--workers N]

In one run, on embedded SQLite, with the same workers: the matrix of the chosen cells
(the kills by default: every state a corpus keeps comes from one), then `corpus record`
of the same cells, then `corpus check` of that corpus under the same code. A state's
check restores the store, ledger and model state and runs one resumer; a cell runs a
crashing worker and a resumer, so a state should cost less than a cell. The default
selection (research, parallel-fetch, long-chain in tool-batch and tool) keeps about a
hundred states. Target: a state's check <= a matrix cell (wall time per item, the
items running `--workers` at once).
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from killpoint.corpus.check import check
from killpoint.corpus.record import record
from killpoint.engine.campaign import Campaign, CampaignConfig


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default="research,parallel-fetch,long-chain")
    parser.add_argument("--modes", default="tool-batch,tool")
    parser.add_argument("--points", default="kills")
    parser.add_argument("--workers", default="2")
    args = parser.parse_args()
    config = CampaignConfig.from_options(
        scenarios=args.scenarios, modes=args.modes, points=args.points,
        workers=args.workers, keep="none",
    )  # fmt: skip
    t0 = time.monotonic()
    matrix = Campaign(config).run()
    matrix_wall = time.monotonic() - t0
    cells = len(matrix.cells)
    folder = Path(tempfile.mkdtemp(prefix="kp-corpus-bench-"))
    try:
        t0 = time.monotonic()
        recorded = record(config, folder / "corpus")
        record_wall = time.monotonic() - t0
        t0 = time.monotonic()
        checked = check(folder / "corpus", "reference", workers=int(args.workers))
        check_wall = time.monotonic() - t0
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    states = len(checked.states)
    per_cell = matrix_wall / cells if cells else 0.0
    per_state = check_wall / states if states else 0.0
    per_bytes = recorded.bytes // states if states else 0
    print(f"matrix cells          {cells}  in {matrix_wall:.2f} s (baselines included)")
    print(f"wall per matrix cell  {per_cell * 1000:,.0f} ms")
    print(f"states kept           {states}  in {record_wall:.2f} s; {recorded.bytes:,} bytes")
    print(f"bytes per state       {per_bytes:,}")
    print(f"states checked        {states}  in {check_wall:.2f} s (baselines included): "
          f"{checked.counts()}")  # fmt: skip
    print(f"wall per state check  {per_state * 1000:,.0f} ms")
    ratio = per_state / per_cell if per_cell else 0.0
    print(f"state / cell          {ratio:.2f}  (target <= 1.00)")


if __name__ == "__main__":
    main()
