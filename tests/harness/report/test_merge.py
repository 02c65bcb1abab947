"""The plan and the stop a merge of shards keeps (killpoint.report.merge), on hand-made
shard documents; tests/harness/cli/test_merge.py merges real shards."""

# ruff: noqa: SIM300
from __future__ import annotations

from typing import Any

from killpoint.engine.stop_rule import RowCoverage
from killpoint.report.merge import _plan, _stopped, _summed

ROW = ("reference", "research", "runs", "sqlite")
OTHER = ("reference", "research", "tool", "sqlite")


def planned(*rows: tuple[tuple[str, ...], list[str] | None]) -> dict[str, Any]:
    keys = ("runtime", "scenario", "mode", "store")
    return {"planned_cells": [{**dict(zip(keys, r, strict=True)), "schedules": s} for r, s in rows]}


def test_each_rows_cells_of_every_shard_are_its_plan() -> None:
    one = planned((ROW, ["after-checkpoint:1"]), (OTHER, ["mid-batch:1:0"]))
    two = planned((ROW, ["after-checkpoint:2"]), (OTHER, []))
    assert {ROW: ("after-checkpoint:1", "after-checkpoint:2"), OTHER: ("mid-batch:1:0",)} == (
        _plan([one, two])
    )


def test_a_row_one_shard_never_planned_is_unplanned_in_the_merge() -> None:
    """Its cells in that shard are not known: a list of the other shard's would read as
    the row's whole plan."""
    for order in ((ROW, ["after-checkpoint:1"]), (ROW, None)), ((ROW, None), (ROW, ["x:1"])):
        assert {ROW: None} == _plan([planned(order[0]), planned(order[1])])


def test_a_shard_without_a_plan_leaves_the_merge_without_one() -> None:
    assert _plan([planned((ROW, ["after-checkpoint:1"])), {}]) is None


def test_no_shard_stopped_no_stop() -> None:
    assert _stopped([{}, {}], None, [], []) is None


def test_shards_stopped_for_different_reasons_say_both_over_the_whole_plan() -> None:
    stop = {"reason": "budget", "seconds": 3.0, "budget": 60.0, "rows": []}
    shards = [{"stopped": stop}, {"stopped": {**stop, "reason": "fail-fast", "seconds": 9.0}}]
    plan = {ROW: ("after-checkpoint:1", "mid-batch:1:0"), OTHER: None}
    found = _stopped(shards, plan, [], [])
    assert found is not None
    assert ("budget, fail-fast", 9.0, 60.0) == (
        found["reason"], found["seconds"], found["budget"],
    )  # fmt: skip
    assert (0, 2) == (found["ran"], found["planned"])
    assert [True, False] == [r["planned"] for r in found["rows"]]
    assert found["sentence"].startswith("it stopped early (budget, fail-fast): 0 of 2 cells ran")


def test_without_a_plan_the_stopped_shards_rows_add_up() -> None:
    a = RowCoverage(ROW, ("after-checkpoint",), ("after-checkpoint",), 2, 2)
    b = RowCoverage(ROW, ("after-checkpoint", "mid-batch"), (), 3, 0, baseline_failed=False)
    c = RowCoverage(OTHER, ("mid-batch",), (), 1, 0, planned=False)
    summed = _summed([a, b, c])
    assert [ROW, OTHER] == [r.row for r in summed]
    first = summed[0]
    assert (("after-checkpoint", "mid-batch"), ("after-checkpoint",), 5, 2) == (
        first.kinds, first.covered, first.cells, first.ran,
    )  # fmt: skip
    assert (2, 2) == (a.cells, a.ran)  # the shard's own row is left as it was
    assert summed[1].planned is False
