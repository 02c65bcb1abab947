"""first_failure runs on its smallest input (one broken runtime, one row's kills) and prints
its figures."""

from __future__ import annotations

from tests.benchmarks.smoke import figure, run_benchmark


def test_it_times_the_first_unexpected_cell_in_both_orders_and_under_a_budget() -> None:
    out = run_benchmark(
        "first_failure",
        *("--runtimes", "early_checkpoint", "--scenarios", "research", "--modes", "tool-batch"),
        *("--points", "kills", "--workers", "2", "--budget", "60s"),
    )
    assert figure(out, "full matrix (reference)") > 0
    (line,) = [x for x in out.splitlines() if x.startswith("early_checkpoint")]
    old, new, share, budget = line.split()[1:]
    assert float(old) > 0 and float(new) > 0  # each order found it, and says when
    assert share.endswith("%")
    assert budget == "caught"
    assert "first (new order): tests.harness.broken_runtimes:early_checkpoint/" in out
