"""engine_footprint runs on its smallest input and prints its figures."""

from __future__ import annotations

from tests.benchmarks.smoke import figure, run_benchmark


def test_it_prints_descriptors_and_memory_at_two_cells_and_the_growth() -> None:
    out = run_benchmark(
        "engine_footprint",
        *("--cells", "4", "--first", "2", "--workers", "2"),
        *("--scenarios", "research", "--points", "after-checkpoint"),
    )
    assert figure(out, "cell     2 at") > 0
    assert figure(out, "cell     4 at") > 0
    assert "growth from cell 2 to cell 4:" in out
    assert figure(out, "the results the campaign keeps for its report:") > 0
    assert "building the JSON" in out
