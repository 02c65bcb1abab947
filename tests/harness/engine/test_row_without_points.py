"""A row whose baseline ran but offers no point of the kinds asked for (`--points
boundaries` in a mode that writes only at a run's end: one checkpoint, no boundary between
two) plans no cell: it is said skipped, with why, on the terminal and in the JSON's
`skipped`, as every other skip is; never a row of 0 cells without a word."""

# ruff: noqa: SIM300
from __future__ import annotations

import html
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from killpoint.engine.matrix_plan import make_plan
from killpoint.engine.options import CampaignConfig

REPO = Path(__file__).resolve().parents[3]
REASON = (
    "no after-checkpoint point in this row: its baseline has 1 checkpoint and 4 tool "
    "batches; mode 'runs' writes only at a run's end"
)

pytestmark = pytest.mark.slow


def matrix(tmp_path: Path, modes: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "matrix", "--scenarios", "research",
         "--modes", modes, "--points", "boundaries", "--timeout", "20",
         "--json", str(tmp_path / "m.json"), "--report", str(tmp_path / "m.html"),
         "--work-dir", str(tmp_path), "--keep", "none"],
        cwd=tmp_path, capture_output=True, text=True, timeout=300, env=dict(os.environ),
    )  # fmt: skip


def test_a_row_with_no_point_of_those_asked_is_skipped_with_its_reason(tmp_path: Path) -> None:
    result = matrix(tmp_path, "runs,tool")
    assert 0 == result.returncode, result.stdout + result.stderr
    document = json.loads((tmp_path / "m.json").read_text())
    assert {"tool"} == {c["mode"] for c in document["cells"]}  # the runs row: none
    assert [("research", "runs", None, REASON)] == [
        (s["scenario"], s["mode"], s["point"], s["reason"]) for s in document["skipped"]
    ]
    assert f"skipped research/runs: {REASON}" in result.stdout.splitlines()
    page = html.unescape((tmp_path / "m.html").read_text())
    assert f"skipped: {REASON}" in page  # the row's line in the matrix


def test_a_campaign_whose_only_row_offers_no_point_says_why_it_ran_nothing(
    tmp_path: Path,
) -> None:
    result = matrix(tmp_path, "runs")
    assert 5 == result.returncode, result.stdout + result.stderr
    assert f"skipped research/runs: {REASON}" in result.stdout.splitlines()
    assert f"  {REASON} (research/runs)" in result.stderr.splitlines()
    assert "the selection planned none" not in result.stderr


def test_the_pytest_plan_skips_the_row_with_its_reason(tmp_path: Path) -> None:
    """The plan the pytest plugin ships to its workers says the same skip."""
    config = CampaignConfig.from_options(
        scenarios=("research",), modes=("runs",), points="boundaries", work_dir=tmp_path
    )
    plan = make_plan(config)
    assert [] == plan.cells
    assert [("reference/research/runs/sqlite", REASON)] == plan.skipped
    assert [REASON] == [s.reason for s in plan.skipped_rows]
