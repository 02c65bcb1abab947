"""cut_ground_truth runs on its smallest input and prints its table (where FUSE mounts)."""

# ruff: noqa: SIM300

from __future__ import annotations

from tests.benchmarks.smoke import needs_fuse, run_benchmark


def test_it_prints_a_row_per_case_with_a_count_per_model() -> None:
    needs_fuse()
    out = run_benchmark(
        "cut_ground_truth", "--seeds", "1", "--cases", "WAL:FULL,WAL:NORMAL", "--models",
        "synced,torn-seq",
    )  # fmt: skip
    rows = [line for line in out.splitlines() if line.startswith("| WAL |")]
    assert ["| WAL | FULL | 1 durable | 1 durable |",
            "| WAL | NORMAL | 1 lost (held 0-2) | 1 lost (held 0-2) |"] == rows  # fmt: skip
