"""agno_speed runs on its smallest input and prints its figures (where agno is installed)."""

from __future__ import annotations

import pytest

from tests.benchmarks.smoke import figure, run_benchmark


def test_it_prints_a_cell_beside_a_fresh_run() -> None:
    pytest.importorskip("agno")
    out = run_benchmark(
        "agno_speed",
        *("--scenarios", "research", "--modes", "tool-batch", "--points", "after-checkpoint:1"),
        *("--workers", "1", "--repeats", "1"),
    )
    assert figure(out, "cells") == 1
    assert figure(out, "median per agno cell") > 0
    assert figure(out, "fresh interpreter, agno, 1 run") > 0
    assert figure(out, "cell / fresh run") > 0
