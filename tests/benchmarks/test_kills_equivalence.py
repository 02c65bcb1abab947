"""kills_equivalence runs on its smallest input and prints its figures."""

from __future__ import annotations

from tests.benchmarks.smoke import figure, run_benchmark


def test_it_prints_the_counts_of_both_paths_and_of_the_cells_judged_otherwise() -> None:
    out = run_benchmark(
        "kills_equivalence",
        *("--scenarios", "research", "--modes", "tool-batch", "--points", "after-checkpoint"),
        *("--workers", "2"),
    )
    cells = figure(out, "cells")
    assert cells >= 2
    assert figure(out, "from a traced copy") == cells  # every boundary of the row
    assert figure(out, "traced cells judged otherwise") == 0
    assert figure(out, "ids on one side") == 0
