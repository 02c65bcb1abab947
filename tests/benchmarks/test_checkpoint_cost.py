"""checkpoint_cost runs on its smallest input and prints its figures."""

from __future__ import annotations

from tests.benchmarks.smoke import figure, run_benchmark


def test_it_prints_the_early_and_late_medians_and_their_ratio() -> None:
    out = run_benchmark("checkpoint_cost", "--batches", "26", "--repeat", "1")
    assert figure(out, "checkpoints") == 27  # 26 batches and the COMPLETED write
    assert figure(out, "median cp 5-15") > 0
    assert figure(out, "median cp 16-26") > 0
    assert figure(out, "ratio late/early") > 0
