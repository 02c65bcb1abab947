"""corpus_check_cost runs on its smallest input and prints its figures."""

from __future__ import annotations

from tests.benchmarks.smoke import figure, run_benchmark


def test_it_prints_the_cost_of_a_state_beside_a_cell() -> None:
    out = run_benchmark(
        "corpus_check_cost",
        *("--scenarios", "research", "--modes", "tool-batch", "--points", "after-checkpoint"),
    )
    assert figure(out, "matrix cells") == 4
    assert figure(out, "states checked") == 4
    assert figure(out, "wall per state check") > 0
    assert figure(out, "bytes per state") > 0
    assert figure(out, "state / cell") > 0
