"""The plan a report keeps: which cells were planned and never ran, and which rows stopped
before their cells were planned."""

# ruff: noqa: SIM300
from __future__ import annotations

from killpoint.engine.campaign import CampaignResult
from killpoint.report.document import to_document
from killpoint.report.planned import (
    NotPlanned,
    NotRun,
    count_not_run,
    incomplete,
    no_crash_rows,
    not_planned_json,
    not_planned_lines,
    not_run,
    not_run_of,
    planned_json,
    read_not_planned,
    read_planned,
    shown_cell,
)
from tests.harness.failed_baseline import (
    OFFERED,
    PROBLEM,
    ROW,
    document_of,
    failed_row,  # noqa: F401  (a fixture)
)
from tests.harness.report.test_terminal import interrupted_result

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


def test_a_row_whose_baseline_failed_reads_back_as_not_planned(
    failed_row: CampaignResult,  # noqa: F811
) -> None:
    """A real campaign's document: the row's baseline says its crash cells were not planned
    and how many its run offered; the reason is the baseline's failure."""
    document = document_of(failed_row)
    (base,) = document["baselines"]
    assert (True, OFFERED) == (base["not_planned"], base["cells_not_planned"])
    (found,) = read_not_planned(document)
    assert (ROW, OFFERED) == (found.row, found.cells)
    assert found.why.startswith(PROBLEM)
    assert found.line().startswith(
        "research/tool-batch: its baseline failed, so the 3 crash cells its run offered "
        f"were not planned: {PROBLEM}"
    )


def test_a_row_not_planned_says_how_many_cells_or_that_its_points_were_not() -> None:
    counted, unknown = NotPlanned(CANCEL, "it hung", 1), NotPlanned(CONFIRM, "it died", None)
    assert "the 1 crash cell its run offered was not planned" == counted.what()
    assert "its points were not planned" == unknown.what()
    assert ("1 not planned", "not planned") == (counted.short(), unknown.short())
    assert "confirm/runs: its baseline failed, so its points were not planned: it died" == (
        unknown.line()
    )
    assert [
        "not planned: 2 rows whose baseline failed; each row's one cell carries the failure, "
        "without a crash",
        f"  {counted.line()}",
        "  and 1 more row (the JSON's `baselines`)",
    ] == not_planned_lines([counted, unknown], 1)
    assert [] == not_planned_lines([], 8)


def test_only_a_row_not_planned_says_so_in_its_baseline() -> None:
    """A planned row's baseline says nothing of it (its reports read as before), nor does
    one written before rows not planned were kept."""
    assert {} == not_planned_json({CANCEL: 2}, CONFIRM)
    assert {"not_planned": True, "cells_not_planned": None} == not_planned_json(
        {CONFIRM: None}, CONFIRM
    )
    old = {"baselines": [{"runtime": "agno", "scenario": "confirm", "problem": "it died"}]}
    assert [] == read_not_planned(old)


def test_a_cell_of_a_row_whose_baseline_failed_is_named_by_its_row_without_a_crash(
    failed_row: CampaignResult,  # noqa: F811
) -> None:
    """Its id keeps the point it was planned at (replay and --rerun-failed read it), but an
    example names its row and that it made no crash, never `mid-model:1`; any other cell
    is named by its id, a scenario with slashes in it included."""
    document = document_of(failed_row)
    rows = no_crash_rows(document)
    assert frozenset({ROW}) == rows
    (cell,) = document["cells"]
    assert cell["id"].endswith("/mid-model:1")  # kept: the id a replay is given
    assert f"{'/'.join(ROW)} (no crash: its baseline failed)" == shown_cell(cell["id"], rows)
    other = f"{'/'.join(CANCEL)}/after-checkpoint:1"
    assert other == shown_cell(other, rows)
    cassette = ("agno", "cassette:a/b.json", "runs", "sqlite")
    assert shown_cell(f"{'/'.join(cassette)}/mid-model:1", {cassette}).startswith(
        "agno/cassette:a/b.json/runs/sqlite (no crash"
    )


def test_the_cells_not_run_are_read_from_the_document_as_from_the_plan() -> None:
    """What the terminal's table and the Markdown summary both read (not_run_of)."""
    plan = {CANCEL: ["after-checkpoint:1", "sigstop:1"], CONFIRM: None}
    document = {
        "planned_cells": planned_json(plan),
        "cells": [{**dict(zip(("runtime", "scenario", "mode", "store"), CANCEL, strict=True)),
                   "schedule": ["sigstop:1"]}],
    }  # fmt: skip
    assert [NotRun(CANCEL, ("after-checkpoint:1",), 1), NotRun(CONFIRM, None, 0)] == (
        not_run_of(document)
    )
    assert [] == not_run_of({"cells": document["cells"]})  # no plan kept: nothing to say


def test_what_a_campaign_did_not_run_is_one_sentence_with_its_reason() -> None:
    """What `--rerun-failed` and JUnit say of a report that is not whole: the cells and rows
    not run, and why (interrupted, or the stop's own clause); a document without its plan
    (a merge of shards) counts from its summary; a whole campaign says nothing."""
    from killpoint.engine.stop_rule import BUDGET, Stopped

    document = to_document(interrupted_result())
    assert (
        "3 of 5 planned cells did not run and the cells of 1 row were never planned because "
        "the campaign was interrupted"
    ) == incomplete(document)
    stopped = document | {"interrupted": False, "stopped": Stopped(BUDGET, 300, 300).to_json()}
    assert incomplete(stopped) == (
        "3 of 5 planned cells did not run and the cells of 1 row were never planned because "
        "the campaign stopped at its time budget (5 min 0 s)"
    )
    merged = {k: v for k, v in document.items() if k != "planned_cells"}
    assert "3 of 5 planned cells did not run because the campaign was interrupted" == (
        incomplete(merged)
    )
    whole = interrupted_result()
    whole.interrupted, whole.planned = False, 2
    whole.plan = {
        ("agno", "research", "tool-batch", "sqlite"): ["after-checkpoint:1", "after-checkpoint:2"]
    }
    assert None is incomplete(to_document(whole))
