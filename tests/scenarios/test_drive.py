# ruff: noqa: SIM300 - tests assert `expected == actual`
"""drive(): the runtime-neutral loop over a scenario's runs (a recording driver pins it)."""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Mapping
from pathlib import Path

from killpoint.scenarios import RunResult, Scenario, ScriptedModel, drive, run_id_for
from killpoint.scenarios.builtin import multi_run, research


class RecordingDriver:
    """Answers each start/resume with the next scripted status and records the calls."""

    def __init__(self, statuses: list[tuple[str, list[tuple[str, str]]]]) -> None:
        self.statuses = list(statuses)
        self.calls: list[tuple[str, ...]] = []

    def _next(self, run_id: str) -> RunResult:
        status, pending = self.statuses.pop(0)
        return RunResult(run_id=run_id, status=status, pending=pending)

    async def start(self, input: str, *, session_id: str, run_id: str) -> RunResult:
        self.calls.append(("start", run_id))
        return self._next(run_id)

    async def resume(
        self, run_id: str, *, session_id: str, confirmations: Mapping[str, bool]
    ) -> RunResult:
        self.calls.append(("resume", run_id, *sorted(f"{k}={v}" for k, v in confirmations.items())))
        return self._next(run_id)

    def cancel(self, run_id: str) -> None:
        self.calls.append(("cancel", run_id))


def run(sc: Scenario, driver: RecordingDriver, tmp_path: Path, **kwargs: object) -> list[str]:
    model = ScriptedModel(sc.script, tmp_path)
    results = asyncio.run(drive(sc, driver, model, session_id="s", **kwargs))  # type: ignore[arg-type]
    return [r.status for r in results]


def test_pauses_are_answered_from_scenario_confirm(tmp_path: Path) -> None:
    """A PAUSED run is resumed with each pending call answered by scenario.confirm
    (True for tools it does not name) until it rests."""
    sc = dataclasses.replace(research.SCENARIO, confirm={"no": False})
    driver = RecordingDriver([("PAUSED", [("c1", "no"), ("c2", "yes")]), ("COMPLETED", [])])
    assert ["COMPLETED"] == run(sc, driver, tmp_path)
    assert [("start", "s-run1"), ("resume", "s-run1", "c1=False", "c2=True")] == driver.calls


def test_errors_are_continued_only_as_often_as_the_scenario_says(tmp_path: Path) -> None:
    """continue_on_error=1: one ERROR is continued; the second ERROR is the result."""
    sc = dataclasses.replace(research.SCENARIO, continue_on_error=1)
    driver = RecordingDriver([("ERROR", []), ("ERROR", [])])
    assert ["ERROR"] == run(sc, driver, tmp_path)
    assert [("start", "s-run1"), ("resume", "s-run1")] == driver.calls


def test_a_run_that_does_not_complete_ends_the_session(tmp_path: Path) -> None:
    """multi-run: run 1 CANCELLED means runs 2 and 3 never start."""
    driver = RecordingDriver([("CANCELLED", [])])
    assert ["CANCELLED"] == run(multi_run.SCENARIO, driver, tmp_path)
    assert [("start", "s-run1")] == driver.calls


def test_resume_at_continues_that_run_then_starts_the_rest(tmp_path: Path) -> None:
    """resume_at=1 (after a crash in run 2): continue run 2, then start run 3."""
    driver = RecordingDriver([("COMPLETED", []), ("COMPLETED", [])])
    assert ["COMPLETED", "COMPLETED"] == run(multi_run.SCENARIO, driver, tmp_path, resume_at=1)
    assert [("resume", "s-run2"), ("start", "s-run3")] == driver.calls
    assert ["s-run1", "s-run2"] == [run_id_for("s", i) for i in range(2)]
