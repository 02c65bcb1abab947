# ruff: noqa: SIM300 - tests assert `expected == actual`
"""What a cell reads of the store at a crash, and holds it to: a run COMPLETED or CANCELLED
there must be over at the same point of the uninterrupted run. Real workers, real kills,
real SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest

from killpoint import kinds
from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig
from killpoint.values.cell import Cell, CellResult

pytestmark = pytest.mark.slow

BROKEN = "tests.harness.broken_runtimes:running_as_completed"


def run(tmp_path: Path, runtime: str, scenario: str, schedule: str) -> CellResult:
    engine = Engine(EngineConfig(work_root=tmp_path / "work", keep="none"))
    return engine.run_cell(
        Cell(runtime, scenario, "tool-batch", "sqlite", kinds.parse_schedule(schedule))
    )


def early(result: CellResult) -> list[dict[str, object]]:
    return [f for f in result.findings if f["kind"] == "terminal-early"]


def test_a_run_stored_completed_before_its_end_is_what_the_cell_says(tmp_path: Path) -> None:
    """After the research run's last batch (checkpoint 4 of 5, its final answer still to
    ask) the broken store holds the run COMPLETED: nothing resumes it. The cell said only
    that its messages differ; it now says why, first, from the store at the crash."""
    result = run(tmp_path, BROKEN, "research", "after-checkpoint:4")
    assert "COMPLETED" == result.store_at_crash["runs"][0]["status"]  # type: ignore[index]
    (found,) = early(result)
    assert ("corrupt", False) == (result.verdict, result.expected)
    assert found["sentence"] == (
        "run 1 was already COMPLETED in the store at after-checkpoint:4, with 4 checkpoints "
        "landed; the uninterrupted run was not over there: it went on to ask for model turn 5 "
        "and ended at checkpoint 5"
    )
    assert result.detail == found["sentence"]
    assert any(e.text == f"store: {found['sentence']}" for e in result.timeline)


def test_the_reference_runtime_is_over_wherever_its_store_says_so(tmp_path: Path) -> None:
    """The reference runtime stores COMPLETED or CANCELLED only at a run's end: the same
    point, a run that ended before the crash (multi-run's first, its second in flight), a
    cancelled run killed at its last step and read again once it has ended, carry no
    such finding."""
    for scenario, schedule in (
        ("research", "after-checkpoint:4"),
        ("multi-run", "after-checkpoint:2"),
        ("multi-run", "mid-model:3"),
        ("cancel", "after-checkpoint:3"),
        ("cancel", "continue-ended:1"),
    ):
        result = run(
            tmp_path / scenario / schedule.replace(":", "_"), "reference", scenario, schedule
        )
        assert [] == early(result), (schedule, result.detail)
        assert result.expected, (schedule, result.detail)


LEFT_OUT = "tests.harness.broken_runtimes:results_left_out"


def test_a_checkpoint_that_left_out_its_finished_batch_allows_no_repeat(tmp_path: Path) -> None:
    """The broken runtime's checkpoint 1 begins once charge_card has returned, and lands
    without its result. A repeat after a crash there was allowed, the call said to be "in
    flight at a crash"; the result was in the runtime's hands, so the repeat is beyond the
    bound, and says which checkpoint left it out."""
    result = run(tmp_path, LEFT_OUT, "side-effects", "after-checkpoint:1")
    assert ("duplicated", False) == (result.verdict, result.expected)
    (found,) = [f for f in result.findings if f["kind"] == "effect-duplicated"]
    assert found["sentence"] == (
        'charge_card({"amount_cents":1999,"customer":"cus_42"}) ran once more than in the '
        "baseline; it had returned, with every call of its batch, before checkpoint 1 began, "
        "which landed without its result: the mode makes a batch's results durable with it, "
        "so no repeat is allowed"
    )
    said = "1 call returned before checkpoint 1 began, which landed without its result"
    assert any(e.text.startswith(said) for e in result.timeline)


def test_a_call_in_flight_may_still_repeat_once(tmp_path: Path) -> None:
    """The same broken runtime killed inside its batch, and the reference runtime at the
    same points: what was in flight there is allowed its one repeat, as before."""
    inside = run(tmp_path, LEFT_OUT, "side-effects", "mid-batch:2:1")
    assert ("ok", True) == (inside.verdict, inside.expected), inside.detail
    for schedule in ("mid-batch:2:1", "after-checkpoint:1", "after-checkpoint:2"):
        clean = run(tmp_path, "reference", "side-effects", schedule)
        assert ("ok", True) == (clean.verdict, clean.expected), (schedule, clean.detail)
