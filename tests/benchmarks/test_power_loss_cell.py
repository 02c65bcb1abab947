"""power_loss_cell runs on its smallest input and prints its figures (where FUSE mounts)."""

from __future__ import annotations

from tests.benchmarks.smoke import figure, needs_fuse, run_benchmark


def test_it_prints_a_power_loss_cell_beside_a_kill_cell() -> None:
    needs_fuse()
    out = run_benchmark("power_loss_cell", "--scenarios", "research", "--repeats", "1")
    assert figure(out, "research") >= 1  # K, then the medians and ratios
    assert figure(out, "worst ratio") > 0
