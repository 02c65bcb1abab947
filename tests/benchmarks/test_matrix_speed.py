"""matrix_speed runs on its smallest input and prints its figures."""

from __future__ import annotations

from tests.benchmarks.smoke import figure, run_benchmark


def test_it_prints_cells_per_second_and_the_harness_share() -> None:
    out = run_benchmark(
        "matrix_speed",
        *("--scenarios", "research", "--points", "after-checkpoint:1"),
        *("--workers", "2", "--repeats", "1"),
    )
    assert figure(out, "cells ") >= 1
    assert figure(out, "cells per second") > 0
    assert figure(out, "CPU per cell") > 0
    assert figure(out, "runs' own work") > 0
    assert "harness's share" in out
    assert figure(out, "fresh interpreter start") > 0
