"""Are `--kills fast` and `--kills real` the same crash matrix? Runs one plan both ways and
compares the cells by id: prints the counts, and every cell whose verdict, findings or
duplicate counts differ.

    python -m tests.benchmarks.kills_equivalence [--scenarios a,b] [--points P] [--workers N]

Default: the whole default matrix (every scenario, mode and point of the reference runtime
on SQLite). A cell resumed from its row's traced copy must be judged exactly as a cell
whose own worker was killed there. Cells of kinds that keep real kills (sigstop, lock-held,
model faults, ...) run the same way twice; any difference among them is the cell's own
nondeterminism under load, and is printed apart. Exit status 1 when a traced cell differs.
"""

from __future__ import annotations

import argparse
import re
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from killpoint.engine.campaign import Campaign, CampaignConfig, default_workers
from killpoint.engine.work_root import default_parent
from killpoint.values.cell import CellResult

PID = re.compile(r"\bpid \d+")
# What a finding says, without its evidence lines (pids and times of this run's workers).
COMPARED = ("kind", "severity", "verdict", "expected", "path", "tool", "sentence")


def judged(cell: CellResult) -> dict[str, Any]:
    """What the two paths must agree on for one cell."""
    return {
        "verdict": cell.verdict,
        "expected": cell.expected,
        "duplicates": cell.duplicates,
        "bound": cell.bound,
        "findings": sorted(
            tuple(PID.sub("pid N", str(f.get(k))) for k in COMPARED) for f in cell.findings
        ),
    }


def traced(cell: CellResult) -> bool:
    """The cell resumed from its row's traced copy (its timeline says so)."""
    return any("traced worker (pid" in e.text for e in cell.timeline)


def differences(real: Iterable[CellResult], fast: Iterable[CellResult]) -> dict[str, Any]:
    """By cell id: the ids only one side has, and each cell judged otherwise."""
    a = {c.id: c for c in real}
    b = {c.id: c for c in fast}
    differ = {
        i: {"real": judged(a[i]), "fast": judged(b[i]), "traced": traced(b[i])}
        for i in sorted(a.keys() & b.keys())
        if judged(a[i]) != judged(b[i])
    }
    return {
        "only real": sorted(a.keys() - b.keys()),
        "only fast": sorted(b.keys() - a.keys()),
        "differ": differ,
    }


def run(kills: str, **options: Any) -> tuple[list[CellResult], float]:
    with tempfile.TemporaryDirectory(prefix="killpoint-equiv-", dir=default_parent()) as tmp:
        config = CampaignConfig.from_options(
            keep="none", work_root=Path(tmp), kills=kills, **options
        )
        t0 = time.monotonic()
        result = Campaign(config).run()
        return list(result.cells), time.monotonic() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scenarios", default=None, help="comma-separated (default: all)")
    parser.add_argument("--modes", default=None, help="comma-separated (default: all)")
    parser.add_argument("--points", default="all")
    parser.add_argument("--workers", type=int, default=default_workers())
    args = parser.parse_args()
    options = {"scenarios": args.scenarios, "modes": args.modes, "points": args.points}
    real, real_s = run("real", workers=args.workers, **options)
    fast, fast_s = run("fast", workers=args.workers, **options)
    found = differences(real, fast)
    n_traced = sum(1 for c in fast if traced(c))
    bad = {i: d for i, d in found["differ"].items() if d["traced"]}
    other = {i: d for i, d in found["differ"].items() if not d["traced"]}
    print(
        f"cells               {len(real)} real ({real_s:.0f} s), {len(fast)} fast ({fast_s:.0f} s)"
    )
    print(f"from a traced copy  {n_traced}")
    print(f"ids on one side     {len(found['only real']) + len(found['only fast'])}")
    print(f"traced cells judged otherwise     {len(bad)}")
    print(
        f"real-kill cells judged otherwise  {len(other)}  (the same path twice: the cell's own nondeterminism)"
    )
    for label, cells in (("traced", bad), ("real both times", other)):
        for i, d in cells.items():
            print(f"  {label}: {i}\n    real {d['real']}\n    fast {d['fast']}")
    return 1 if bad or found["only real"] or found["only fast"] else 0


if __name__ == "__main__":
    sys.exit(main())
