"""When a campaign stops early, and what it says it covered."""

# ruff: noqa: SIM300
from __future__ import annotations

from killpoint.engine.stop_rule import BUDGET, FAIL_FAST, Stopped, StopRule, coverage
from killpoint.values.cell import CellResult


def cell(scenario: str, schedule: str, *, expected: bool = True) -> CellResult:
    return CellResult(
        id=f"reference/{scenario}/tool-batch/sqlite/{schedule}",
        runtime="reference",
        scenario=scenario,
        mode="tool-batch",
        store="sqlite",
        schedule=schedule.split("+"),
        verdict="ok" if expected else "diverged",
        expected=expected,
    )


class TestStopRule:
    def test_fail_fast_fires_at_the_first_unexpected_cell_once(self) -> None:
        rule = StopRule(budget=None, fail_fast=True, started=0.0)
        assert not rule.after(cell("research", "mid-model:1"))
        assert not rule.due()
        assert rule.after(cell("research", "mid-model:2", expected=False))
        assert not rule.after(cell("research", "mid-model:3", expected=False))  # once
        assert (FAIL_FAST, True) == (rule.reason, rule.due())

    def test_without_fail_fast_an_unexpected_cell_stops_nothing(self) -> None:
        rule = StopRule(budget=None, fail_fast=False, started=0.0)
        assert not rule.after(cell("research", "mid-model:2", expected=False))
        assert not rule.due(now=1e9)

    def test_the_budget_is_due_once_spent_from_the_start(self) -> None:
        rule = StopRule(budget=60.0, fail_fast=False, started=100.0)
        assert 10.0 == rule.left(now=150.0)
        assert not rule.due(now=159.9)
        assert rule.due(now=160.0)
        assert (BUDGET, 60.0) == (rule.reason, rule.fired_at is not None and 60.0)


def test_coverage_counts_cells_and_kinds_per_row_and_rows_never_planned() -> None:
    research = ("reference", "research", "tool-batch", "sqlite")
    parallel = ("reference", "parallel", "tool-batch", "sqlite")
    cancel = ("reference", "cancel", "tool-batch", "sqlite")
    plan = {
        research: ["after-checkpoint:1", "after-checkpoint:2", "mid-batch:2:0"],
        parallel: ["after-checkpoint:1", "mid-model:1+after-checkpoint:2"],
        cancel: None,  # stopped before its baseline was done
    }
    ran = [
        cell("research", "after-checkpoint:2"),
        cell("research", "mid-batch:2:0"),
        cell("parallel", "mid-model:1+after-checkpoint:2"),
    ]
    rows = {r.row: r for r in coverage(plan, ran)}
    assert (3, 2, True) == (rows[research].cells, rows[research].ran, rows[research].whole)
    assert ("after-checkpoint", "mid-model") == rows[parallel].kinds
    assert (("mid-model",), False) == (rows[parallel].covered, rows[parallel].whole)
    assert (0, False) == (rows[cancel].cells, rows[cancel].whole)
    stopped = Stopped(BUDGET, 60.2, 60.0, list(rows.values()))
    assert (
        "it stopped at its time budget (1 min 0 s): 3 of 5 cells ran; every kind of point "
        "planned ran in 1 of 3 rows"
    ) == stopped.sentence()
    assert {"reason": "budget", "ran": 3, "planned": 5} == {
        k: stopped.to_json()[k] for k in ("reason", "ran", "planned")
    }
