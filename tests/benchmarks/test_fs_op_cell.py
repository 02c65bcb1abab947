"""fs_op_cell runs on its smallest input and prints its figures (where FUSE mounts)."""

from __future__ import annotations

from tests.benchmarks.smoke import figure, needs_fuse, run_benchmark


def test_it_prints_an_fs_op_cell_beside_a_kill_cell() -> None:
    needs_fuse()
    out = run_benchmark("fs_op_cell", "--fs-ops", "1")
    assert figure(out, "after-checkpoint") >= 1
    assert figure(out, "fs-op ") >= 1
    assert figure(out, "fs-op cell / kill cell") > 0
