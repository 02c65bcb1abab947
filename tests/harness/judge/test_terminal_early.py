# ruff: noqa: SIM300 - tests assert `expected == actual`
"""A terminal status stored before the run's end: judged against what the uninterrupted run
did after the same point (the model turns it still asked), never against its stored status
(which shares the runtime's defect); then a real campaign of the broken runtime that writes
every mid-run checkpoint COMPLETED, and of the reference runtime on the same cells."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from killpoint.judge.baseline import Baseline
from killpoint.judge.terminal_early import ended_at, run_span, terminal_early, turns_after

REPO = Path(__file__).resolve().parents[3]
BROKEN = "tests.harness.broken_runtimes:running_as_completed"


def written(n: int) -> list[str]:
    return [f"checkpoint:{n}:{phase}" for phase in ("writing", "committing", "landed")]


# Two runs of one session, as a scenario driver and a runtime that checkpoints after each
# model turn trace them: run 1 asks turns 1 and 2 (checkpoints 1, 2), run 2 turns 3 and 4
# (checkpoints 3, 4).
TWO_RUNS = [
    "run:1:start", "model:1:received", *written(1), "model:2:received", *written(2),
    "run:2:start", "model:3:received", *written(3), "model:4:received", *written(4),
]  # fmt: skip
# A runtime whose last write follows the final answer's (ADK writes end_of_agent after
# it): the run is over once checkpoint 2 lands, checkpoint 3 still to come.
LAST_WRITE_AFTER = [
    "run:1:start", "model:1:received", *written(1), "model:2:received", *written(2),
    *written(3),
]  # fmt: skip

# A cancel is requested as the request for its turn (3) arrives, before the trace marks
# that turn: a runtime that writes CANCELLED at once (ADK) lands it ahead of the mark;
# here, checkpoint 3 is that write, and checkpoint 4 one more write of the ended run.
CANCELLED_AT_ONCE = [
    "run:1:start", "model:1:received", *written(1), "model:2:received", *written(2),
    *written(3), "model:3:received", *written(4),
]  # fmt: skip


def baseline(trace: list[str], *run_ids: str, lag: bool = False) -> Baseline:
    runs = {r: {"status": "COMPLETED"} for r in run_ids}
    return Baseline(
        "reference", "multi-run", "tool-batch", "sqlite", session={"state": None, "runs": runs},
        trace=trace, writes_lag=lag,
    )  # fmt: skip


def session(**statuses: str) -> dict[str, Any]:
    return {"state": None, "runs": {r: {"status": s} for r, s in statuses.items()}}


class TestTheUninterruptedRunAtThePoint:
    def test_the_turns_a_run_still_asked_after_the_point(self) -> None:
        base = baseline(TWO_RUNS, "r1", "r2")
        assert [1, 2] == turns_after(base, 0, run_span(base, 0))
        assert [2] == turns_after(base, 1, run_span(base, 0))
        assert [] == turns_after(base, 2, run_span(base, 0))  # run 1 is over
        assert [3, 4] == turns_after(
            base, 2, run_span(base, 1)
        )  # run 2 has not begun: all of it to come
        assert [4] == turns_after(base, 3, run_span(base, 1))
        assert (2, 4) == (ended_at(base, run_span(base, 0)), ended_at(base, run_span(base, 1)))

    def test_a_point_the_baseline_cannot_place_says_nothing(self) -> None:
        """Writes that lag land where one run's race puts them; a count the baseline never
        held, and a run it never started, have no place in its trace."""
        lagging, two = baseline(TWO_RUNS, "r1", "r2", lag=True), baseline(TWO_RUNS, "r1", "r2")
        assert [] == turns_after(lagging, 1, run_span(lagging, 0))
        assert [] == turns_after(two, 5, run_span(two, 1))
        assert None is run_span(two, 2)  # no third run: nothing to place


class TestTerminalEarly:
    def test_a_run_completed_with_turns_still_to_ask_is_found(self) -> None:
        """Which run, which status, at which point, and the turns that show it was not
        over: the finding that names the defect."""
        base = baseline(TWO_RUNS, "r1", "r2")
        (found,) = terminal_early(base, session(r1="COMPLETED"), 1, "after-checkpoint:1")
        assert ("terminal-early", "corrupt", "high") == (found.kind, found.verdict, found.severity)
        assert "runs[0].status" == found.path
        assert ([2], "COMPLETED") == (found.expected_value, found.actual_value)
        assert (
            "run 1 was already COMPLETED in the store at after-checkpoint:1, with 1 checkpoint "
            "landed; the uninterrupted run was not over there: it went on to ask for model "
            "turn 2 and ended at checkpoint 2"
        ) == found.sentence
        (cancelled,) = terminal_early(
            base, session(r1="COMPLETED", r2="CANCELLED"), 3, "mid-model:4"
        )
        assert ("runs[1].status", [4]) == (cancelled.path, cancelled.expected_value)
        assert "run 2 was already CANCELLED in the store at mid-model:4" in cancelled.sentence

    def test_a_run_over_at_the_point_is_not_found(self) -> None:
        """A run that ended before the point, a run terminal after its last model turn
        with its last write still to land, and a status that is not terminal."""
        base = baseline(TWO_RUNS, "r1", "r2")
        assert [] == terminal_early(base, session(r1="COMPLETED", r2="RUNNING"), 3, "p")
        assert [] == terminal_early(base, session(r1="COMPLETED", r2="COMPLETED"), 4, "p")
        late = baseline(LAST_WRITE_AFTER, "r1")
        assert [] == terminal_early(late, session(r1="COMPLETED"), 2, "after-checkpoint:2")
        assert 1 == len(terminal_early(late, session(r1="COMPLETED"), 1, "after-checkpoint:1"))
        for status in ("RUNNING", "PAUSED", "ERROR"):
            assert [] == terminal_early(base, session(r1=status), 1, "p")
        assert [] == terminal_early(base, None, 0, "p")

    def test_a_cancel_written_as_it_is_requested_is_not_found(self) -> None:
        """ADK's cancel (adk/cancel/events/sqlite/mid-model:3): CANCELLED lands before the
        trace marks the turn whose request asked for the cancel. Once the run's last write
        has landed, it was over; before it, the cancel's own turn is no evidence for a
        CANCELLED run, though it is for a COMPLETED one."""
        ended = baseline(CANCELLED_AT_ONCE[:-3], "r1")  # checkpoint 3 is the run's last
        assert [3] == turns_after(ended, 3, run_span(ended, 0))
        assert [] == terminal_early(ended, session(r1="CANCELLED"), 3, "mid-model:3")
        base = baseline(CANCELLED_AT_ONCE, "r1")
        assert [] == terminal_early(base, session(r1="CANCELLED"), 3, "mid-model:3", 3)
        assert 1 == len(terminal_early(base, session(r1="CANCELLED"), 3, "mid-model:3"))
        assert 1 == len(terminal_early(base, session(r1="COMPLETED"), 3, "mid-model:3", 3))

    def test_runs_are_matched_by_id_else_by_place(self) -> None:
        """Another adapter's run ids may differ from the baseline's: the run's place in the
        session stands for it; where the id is the baseline's, the id decides."""
        base = baseline(TWO_RUNS, "r1", "r2")
        (by_place,) = terminal_early(base, session(x="COMPLETED", y="COMPLETED"), 3, "p")
        assert "runs[1].status" == by_place.path
        (by_id,) = terminal_early(base, {"runs": {"r2": {"status": "COMPLETED"}}}, 3, "p")
        assert "runs[1].status" == by_id.path


def matrix(
    tmp_path: Path, runtime: str, name: str
) -> tuple[subprocess.CompletedProcess[str], Path]:
    out = tmp_path / name
    out.mkdir()
    run = subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "matrix", "--runtime", runtime,
         "--scenarios", "research", "--modes", "tool-batch", "--points", "after-checkpoint,mid-batch",
         "--seed", "1", "--keep", "none", "--work-dir", str(tmp_path), "--color", "never",
         "--json", str(out / "m.json"), "--report", str(out / "m.html"),
         "--markdown", str(out / "m.md"), "--text", str(out / "m.txt"), "--junit", str(out / "m.xml")],
        cwd=tmp_path, capture_output=True, text=True, timeout=240,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    return run, out


def kinds_of(cell: dict[str, Any]) -> set[str]:
    return {f["kind"] for f in cell["findings"]}


@pytest.mark.slow
def test_a_campaign_names_the_terminal_status_stored_mid_run(tmp_path: Path) -> None:
    """running_as_completed writes RUNNING as COMPLETED: every cell whose crash finds a
    checkpoint of the run in the store finds it COMPLETED before the run's end. Each such
    cell says so (corrupt), the campaign's one cause is led by it, and every output names
    it; the reference runtime's cells, the same selection, carry none."""
    broken, out = matrix(tmp_path, BROKEN, "broken")
    assert 1 == broken.returncode, broken.stderr
    document = json.loads((out / "m.json").read_text(encoding="utf-8"))
    held = [c for c in document["cells"] if c["store_at_crash"]["runs"]]
    assert 7 == len(held)
    for cell in held:
        assert {"COMPLETED"} == {r["status"] for r in cell["store_at_crash"]["runs"]}
        assert "terminal-early" in kinds_of(cell), cell["id"]
        assert "corrupt" == cell["verdict"] and cell["detail"].startswith(
            "run 1 was already COMPLETED"
        )
    assert ["terminal-early"] == [c["kind"] for c in document["causes"]]
    assert (
        "1. terminal-early at runs[*].status: 7 cells (7 corrupt), 1 row, 7 failing"
        in broken.stdout
    )
    (cause,) = document["causes"]
    assert cause["sentence"].startswith("A run is stored as over before its end: in 7 cells")
    assert f"e.g. {cause['example_cell']}: {cause['example']}" in broken.stdout
    point = cause["example_cell"].rpartition("/")[2]
    assert re.fullmatch(
        rf"run 1 was already COMPLETED in the store at {point}, with \d checkpoints? landed; "
        r"the uninterrupted run was not over there: it went on to ask for model turns? "
        r"[\d.]+ and ended at checkpoint 5",
        cause["example"],
    ), cause["example"]
    # Markdown escapes the hyphen.
    faces = {"m.html": "terminal-early", "m.md": "terminal\\-early", "m.txt": "terminal-early",
             "m.xml": "terminal-early"}  # fmt: skip
    for face, named in faces.items():
        assert named in (out / face).read_text(encoding="utf-8"), face

    sound, out = matrix(tmp_path, "reference", "sound")
    assert 0 == sound.returncode, sound.stderr
    document = json.loads((out / "m.json").read_text(encoding="utf-8"))
    assert len(document["cells"]) == 8
    assert [] == [c["id"] for c in document["cells"] if "terminal-early" in kinds_of(c)]
    assert all(c["expected"] for c in document["cells"])
