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


def test_a_row_whose_baseline_failed_is_said_not_planned_never_covered() -> None:
    """Its one cell stands at a point no kind of which was planned (it makes no crash): the
    row counts no kind, is never "every kind ran", and the sentence says it apart. It read
    "every kind of point planned ran in 2 of 2 rows" of a campaign that crashed one."""
    research = ("reference", "research", "tool-batch", "sqlite")
    failed = ("reference", "parallel", "tool-batch", "sqlite")
    plan = {research: ["after-checkpoint:1"], failed: ["mid-model:1"]}
    ran = [cell("research", "after-checkpoint:1"), cell("parallel", "mid-model:1")]
    rows = {r.row: r for r in coverage(plan, ran, not_planned={failed})}
    assert ((), (), True, False) == (
        rows[failed].kinds, rows[failed].covered, rows[failed].baseline_failed, rows[failed].whole
    )  # fmt: skip
    assert rows[research].whole and not rows[research].baseline_failed
    stopped = Stopped(FAIL_FAST, 2.0, None, list(rows.values()))
    assert (
        "it stopped at its first unexpected cell (--fail-fast): 2 of 2 cells ran; every kind "
        "of point planned ran in 1 of 1 row; 1 row not planned: its baseline failed"
    ) == stopped.sentence()
    assert ["parallel/tool-batch: its baseline failed; no crash cell planned"] == (
        stopped.partial_lines(8)
    )
    # Every row's baseline failed, and one's cell did not run: no "0 of 0 rows".
    alone = Stopped(FAIL_FAST, 2.0, None, coverage(plan, ran[1:], not_planned=set(plan)))
    assert (
        "it stopped at its first unexpected cell (--fail-fast): 1 of 2 cells ran; 2 rows not "
        "planned: their baselines failed"
    ) == alone.sentence()
    assert (
        "research/tool-batch: its baseline failed; no crash cell planned, and the cell that "
        "carries its failure did not run"
    ) == alone.partial_lines(8)[0]


def test_a_stop_reads_back_from_its_json_and_says_the_same() -> None:
    """Every output of a report says the stop from the report's `stopped`, by these same
    methods; a field missing or of another type (an older or a hand-made report) is read
    as nothing of it, never an error."""
    research = ("reference", "research", "tool-batch", "sqlite")
    failed = ("reference", "parallel", "tool-batch", "sqlite")
    plan = {research: ["after-checkpoint:1", "mid-batch:2:0"], failed: ["mid-model:1"]}
    ran = [cell("research", "after-checkpoint:1"), cell("parallel", "mid-model:1")]
    stopped = Stopped(BUDGET, 61.5, 60.0, coverage(plan, ran, not_planned={failed}))
    again = Stopped.from_json(stopped.to_json())
    assert stopped == again
    assert (stopped.sentence(), stopped.partial_lines(1)) == (
        again.sentence(),
        again.partial_lines(1),
    )
    odd = Stopped.from_json(
        {"reason": "budget", "budget": "soon", "rows": [{"scenario": "x", "cells": "3"}, "junk"]}
    )
    assert (
        "it stopped at its time budget (0 ms): 0 of 0 cells ran; every kind of point planned "
        "ran in 1 of 1 row"
    ) == odd.sentence()
