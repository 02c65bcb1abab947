"""The plan a report keeps: which cells were planned and never ran, and which rows stopped
before their cells were planned."""

# ruff: noqa: SIM300
from __future__ import annotations

from killpoint.report.planned import (
    NotRun,
    count_not_run,
    not_run,
    planned_json,
    read_planned,
)

CANCEL = ("agno", "cancel", "runs", "sqlite")
CONFIRM = ("agno", "confirm", "runs", "sqlite")
CHAIN = ("agno", "chain", "runs", "sqlite")


def test_the_plan_reads_back_as_it_was_written() -> None:
    plan = {CANCEL: ["after-checkpoint:1", "mid-batch:4:0+after-checkpoint:2"], CONFIRM: None}
    written = planned_json(plan)
    assert [
        {"runtime": "agno", "scenario": "cancel", "mode": "runs", "store": "sqlite",
         "schedules": ["after-checkpoint:1", "mid-batch:4:0+after-checkpoint:2"]},
        {"runtime": "agno", "scenario": "confirm", "mode": "runs", "store": "sqlite",
         "schedules": None},
    ] == written  # fmt: skip
    assert {CANCEL: tuple(plan[CANCEL] or ()), CONFIRM: None} == read_planned(
        {"planned_cells": written}
    )


def test_a_report_without_a_plan_has_none() -> None:
    """Written before the plan was kept: it cannot tell "not run" from "not applicable"."""
    assert read_planned({"cells": []}) is None
    assert read_planned({"planned_cells": "junk"}) is None


def test_cells_planned_and_not_run_and_rows_never_planned() -> None:
    plan = {
        CANCEL: ["after-checkpoint:1", "after-checkpoint:2", "sigstop:1"],
        CHAIN: ["after-checkpoint:1"],  # every cell ran: not listed
        CONFIRM: None,  # stopped before its cells were planned
        ("agno", "tiny", "runs", "sqlite"): [],  # nothing applied to it: nothing to run
    }
    ran = [(CANCEL, "after-checkpoint:2"), (CHAIN, "after-checkpoint:1")]
    found = not_run(plan, ran)
    assert [
        NotRun(CANCEL, ("after-checkpoint:1", "sigstop:1"), 1),
        NotRun(CONFIRM, None, 0),
    ] == found
    assert [False, True] == [m.never_started for m in found]
    assert (2, 1) == count_not_run(found)
    assert [] == not_run({CHAIN: ["after-checkpoint:1"]}, ran)
