"""The runtime-floor helpers of the speed benchmark: what they time and how they weigh it."""

from __future__ import annotations

import gc

import pytest

from tests.benchmarks.runtime_floor import floor_per_cell, run_costs


def test_the_floor_weighs_each_run_by_its_cells() -> None:
    costs = {("a", "tool"): 0.010, ("b", "runs"): 0.040}
    cells = [("a", "tool"), ("a", "tool"), ("b", "runs")]
    assert floor_per_cell(costs, cells) == pytest.approx(0.020)


def test_a_longer_scenario_costs_more_and_the_heap_is_unfrozen_after() -> None:
    """A real run in this process, timed: 20 model turns cost more than 3."""
    frozen = gc.get_freeze_count()
    costs = run_costs("reference", [("long-chain", "tool-batch"), ("research", "tool-batch")])
    assert costs[("long-chain", "tool-batch")] > costs[("research", "tool-batch")] > 0
    assert frozen == gc.get_freeze_count()
