"""matrix_speed runs on its smallest input and prints its figures."""

from __future__ import annotations

from tests.benchmarks.smoke import figure, run_benchmark


def test_it_prints_both_paths_side_by_side() -> None:
    out = run_benchmark(
        "matrix_speed",
        *("--scenarios", "research", "--points", "after-checkpoint"),
        *("--workers", "2", "--repeats", "1"),
    )
    cells = figure(out, "cells ")
    assert cells >= 2
    assert "--kills real" in out and "--kills fast" in out
    header = next(line for line in out.splitlines() if "--kills real" in line)
    assert header.index("--kills real") < header.index("--kills fast")
    rows = {line[:28].strip(): line[28:].split() for line in out.splitlines()}
    real, fast = (int(n) for n in rows["cells from a traced copy"])
    assert real == 0 and 0 < fast <= cells  # the row's points, resumed from its copies
    assert all(float(v) > 0 for v in rows["cells per second"])
    assert all(float(v) > 0 for v in rows["CPU per cell, ms"])
    assert len(rows["harness's share, ms"]) == 2
    assert figure(out, "runs' own work") > 0
    assert figure(out, "fast / real cells per second") > 0
    assert figure(out, "fresh interpreter start") > 0
