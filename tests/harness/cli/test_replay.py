"""`killpoint replay`, run as a user runs it (a real process, real workers, a real SQLite
file): what its verdict line names."""

# ruff: noqa: SIM300
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from killpoint import kinds
from killpoint.cli.exit_codes import EXIT_UNEXPECTED
from killpoint.cli.kept import size_of
from killpoint.cli.replay import absent
from killpoint.report.planned import shown_cell
from tests.harness import failed_baseline

REPO = Path(__file__).resolve().parents[3]
IMPURE = ("reference", "tests.harness.scenarios_for_tests:IMPURE", "tool-batch", "sqlite")

pytestmark = pytest.mark.slow


def replay(cell_id: str, work: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "replay", cell_id, "--work-dir", str(work),
         *extra],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip


# A row whose baseline fails, and one whose two baselines differ: neither is planned.
@pytest.mark.parametrize("row", [failed_baseline.ROW, IMPURE], ids=["failed", "nondeterministic"])
def test_the_stand_in_of_a_row_not_planned_is_named_without_its_point(
    tmp_path: Path, row: tuple[str, str, str, str]
) -> None:
    """The row's one cell keeps the stand-in point in its id (replay parses it), but it
    made no crash: its verdict line names it as the reports do, by its row, never by that
    point (which its timeline's "plan: no crash" contradicted)."""
    cell_id = "/".join((*row, str(kinds.stand_in())))
    done = replay(cell_id, tmp_path)
    assert EXIT_UNEXPECTED == done.returncode, done.stdout + done.stderr  # the row's failure
    verdict, *timeline = done.stdout.splitlines()
    assert verdict.startswith(f"{shown_cell(cell_id, [row])}: "), verdict
    assert str(kinds.stand_in()) not in verdict, verdict
    assert any("plan: no crash" in line for line in timeline), timeline


def test_a_cell_planned_but_not_run_is_said_so() -> None:
    """A report's cell that never ran (the campaign was stopped first) has no result to
    compare with: replay --json says so, not that the cell is unknown to the report."""
    cell = kinds.parse_cell("reference/research/tool-batch/sqlite/after-checkpoint:2")
    row = dict(zip(("runtime", "scenario", "mode", "store"), cell.row, strict=True))
    document = {
        "cells": [],
        "interrupted": True,
        "planned_cells": [{**row, "schedules": ["after-checkpoint:1", "after-checkpoint:2"]}],
    }
    said = absent(document, cell, "r.json")
    assert "was planned in 'r.json' but did not run (it was interrupted first)" in said
    assert "replay it without --json" in said
    other = kinds.parse_cell("reference/research/tool-batch/sqlite/after-checkpoint:3")
    assert absent(document, other, "r.json").endswith("is not in 'r.json'")
    # Its row never planned: killed before the row's baseline ended.
    document["planned_cells"] = [{**row, "schedules": None}]
    said = absent(document, cell, "r.json")
    assert "is of a row 'r.json' never planned (it was interrupted before the row's" in said
    assert "replay it without --json" in said


def test_a_kept_folder_is_said_with_the_command_that_removes_it(tmp_path: Path) -> None:
    """A replay's kept folder holds RAM (in /dev/shm by default) until it is removed:
    replay names it, its size and the `rm -rf` that removes it, as a campaign does."""
    cell_id = "reference/tests.harness.scenarios_for_tests:TICKING/tool/sqlite/after-checkpoint:1"
    done = replay(cell_id, tmp_path, "--keep")
    assert 0 == done.returncode, done.stdout + done.stderr
    (note,) = [line for line in done.stdout.splitlines() if line.startswith("kept 1 cell folder")]
    assert f"remove it with: rm -rf {tmp_path}/" in note, note
    # The size is the whole folder's that the command removes (the baselines' with the
    # cell's), not the cell folder's alone: about three runs' stores against one.
    root = Path(note.partition("remove it with: rm -rf ")[2])
    (cell,) = [p for p in root.iterdir() if "baseline" not in p.name]
    said = float(note.partition("which holds ")[2].partition(" kB")[0]) * 1000
    assert said > 2 * size_of(cell) and abs(said - size_of(root)) < 0.1 * said, note


def test_a_failed_baselines_traceback_keeps_its_lines_and_its_folder_is_kept(
    tmp_path: Path,
) -> None:
    """The stand-in of a row whose uninterrupted run raised: replay printed the traceback
    on one line with literal `\\n` escapes, and kept no folder to open its log in. Now its
    timeline keeps the traceback's lines (each under the event), and the baseline's folder
    is kept as a failed cell's is (--keep failed, the default), and said."""
    never = ("tests.harness.broken_adapters:NeverStarts", "research", "tool-batch", "sqlite")
    done = replay("/".join((*never, str(kinds.stand_in()))), tmp_path)
    assert EXIT_UNEXPECTED == done.returncode, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert "\\n" not in done.stdout
    assert " " * 14 + "--- baseline stderr ---" in lines, done.stdout
    assert " " * 14 + "RuntimeError: this driver cannot start a run" in lines, done.stdout
    (kept,) = [line for line in lines if line.startswith("kept: ")]
    folder = Path(kept.removeprefix("kept: ").partition(" (")[0])
    assert folder.is_relative_to(tmp_path) and "baseline" in folder.name, kept
    assert "RuntimeError: this driver cannot start a run" in (folder / "baseline.log").read_text()
