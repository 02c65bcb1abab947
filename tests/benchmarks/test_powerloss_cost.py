"""powerloss_cost runs on its smallest input and prints its figures (where FUSE mounts)."""

from __future__ import annotations

from tests.benchmarks.smoke import needs_fuse, run_benchmark


def test_it_prints_a_run_on_tmpfs_beside_one_on_the_mount() -> None:
    needs_fuse()
    out = run_benchmark("powerloss_cost", "--scenarios", "research", "--repeats", "1")
    row = next(line for line in out.splitlines() if line.startswith("research"))
    tmpfs, mount, ratio = row.split()[1:4]
    assert float(tmpfs) > 0 and float(mount) > 0
    assert ratio.endswith("x") and float(ratio[:-1]) > 0
