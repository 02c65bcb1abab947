"""fork_price runs on one fork and prints the price of a fresh process."""

from __future__ import annotations

from tests.benchmarks.smoke import figure, run_benchmark


def test_a_first_run_in_a_fresh_fork_copies_pages_that_a_second_run_does_not() -> None:
    out = run_benchmark("fork_price", "--forks", "2")
    assert figure(out, "forks") == 2
    faults = {
        label: int(line.rsplit("), ", 1)[1].split()[0].replace(",", ""))
        for line in out.splitlines()
        for label in ("the first run in a fresh fork", "the same run again in that fork")
        if line.startswith(label)
    }
    # The first run writes to pages of the warm parent's heap, the second to its own.
    assert faults["the first run in a fresh fork"] > 10 * faults["the same run again in that fork"]
    assert figure(out, "the first run in a fresh fork") > 0
    assert figure(out, "price of a fresh process, ms") > 0
    assert figure(out, "one page fault, microseconds") > 0
