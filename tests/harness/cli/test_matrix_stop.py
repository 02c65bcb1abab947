"""`killpoint matrix --fail-fast` and `--budget` as a user runs them: a real command, its exit
status, its terminal summary and the report's `stopped`; and Ctrl-C still interrupts a
campaign that has a budget."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.harness.ticking_campaign import TickingCampaign

REPO = Path(__file__).resolve().parents[3]
BROKEN = "tests.harness.broken_runtimes:early_checkpoint"

pytestmark = pytest.mark.slow


def matrix(
    tmp: Path, *options: str, cwd: Path = REPO
) -> tuple[subprocess.CompletedProcess[str], dict[str, Any]]:
    """`killpoint matrix OPTIONS` in `cwd` (the test runtimes import from the repository),
    and the JSON report it wrote."""
    json_path = tmp / "m.json"
    done = subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "matrix", "--workers", "2",
         "--json", str(json_path), "--report", str(tmp / "m.html"), "--keep", "none",
         *options],
        cwd=cwd, capture_output=True, text=True, timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert json_path.exists(), done.stderr
    return done, json.loads(json_path.read_text())


def test_fail_fast_stops_at_the_first_unexpected_cell_exits_1_and_says_what_ran(
    tmp_path: Path,
) -> None:
    done, document = matrix(
        tmp_path, "--runtime", BROKEN, "--scenarios", "research", "--modes", "tool-batch",
        "--points", "kills", "--fail-fast",
    )  # fmt: skip
    assert 1 == done.returncode, done.stderr
    assert "Traceback" not in done.stderr
    stopped, summary = document["stopped"], document["summary"]
    assert "fail-fast" == stopped["reason"]
    assert document["interrupted"] is False
    assert summary["unexpected"] >= 1
    # What ran is what the report holds, and the rest of the plan did not run.
    assert stopped["ran"] == summary["cells"] == len(document["cells"])
    assert stopped["ran"] < stopped["planned"] == summary["planned"]
    assert "stopped: it stopped at its first unexpected cell (--fail-fast)" in done.stdout


def test_a_budget_stops_the_campaign_says_what_it_covered_and_exits_0(tmp_path: Path) -> None:
    """Fifteen seconds cannot run the reference runtime's research rows crashed twice
    over (`--depth 2`: several hundred cells, two at once; the 170 of depth 1 now fit in
    them), but they run the baselines and some cells: the campaign stops at its budget,
    nothing unexpected, so the status is 0 (5 would say no cell ran)."""
    done, document = matrix(
        tmp_path, "--scenarios", "research", "--modes", "runs,tool-batch,tool",
        "--depth", "2", "--budget", "15s",
    )  # fmt: skip
    assert 0 == done.returncode, done.stderr
    stopped, summary = document["stopped"], document["summary"]
    assert "budget" == stopped["reason"] and 15.0 == stopped["budget"]
    assert stopped["seconds"] >= 15.0
    assert document["interrupted"] is False and 0 == summary["unexpected"]
    assert stopped["ran"] == summary["cells"] == len(document["cells"])
    rows = stopped["rows"]
    assert 3 == len(rows)
    # Something was left: a row's cells not all run, or a row not planned by then.
    assert any(r["ran"] < r["cells"] or not r["planned"] for r in rows)
    for r in rows:
        assert set(r["covered"]) <= set(r["kinds"])
    assert "stopped: it stopped at its time budget (15.0 s)" in done.stdout


def test_the_command_line_takes_back_the_files_fail_fast_and_budget(tmp_path: Path) -> None:
    """[tool.killpoint] asks to stop at the first unexpected cell and after a second;
    `--no-fail-fast --budget none` runs every cell all the same, as the command line wins."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(
        '[tool.killpoint]\nfail-fast = true\nbudget = "1s"\n', encoding="utf-8"
    )
    options = ("--runtime", BROKEN, "--scenarios", "research", "--modes", "tool-batch",
               "--points", "after-checkpoint,mid-batch")  # fmt: skip
    done, document = matrix(tmp_path / "a", *options, cwd=project)
    # The file's settings hold: stopped by one or the other (5: before any cell ran).
    assert done.returncode in (1, 5), done.stderr
    assert document["stopped"] is not None
    done, document = matrix(
        tmp_path / "b", *options, "--no-fail-fast", "--budget", "none", cwd=project
    )
    assert 1 == done.returncode, done.stderr
    assert document.get("stopped") is None
    assert document["summary"]["cells"] == document["summary"]["planned"] > 1
    assert document["summary"]["unexpected"] > 1


def test_ctrl_c_interrupts_a_campaign_with_a_budget(tmp_path: Path) -> None:
    """Ctrl-C to the process group, as a terminal sends it, mid-campaign: interrupted (130),
    not a stop at the budget."""
    run = TickingCampaign(tmp_path, "--points", "all", "--budget", "1h", new_session=True)
    try:
        run.ticks(2 * 3 + 10)
        run.finished(1)
        os.killpg(run.proc.pid, signal.SIGINT)
        _, err = run.finish()
    finally:
        run.close()
    assert 130 == run.proc.returncode, err
    document = json.loads(run.json.read_text())
    assert document["interrupted"] is True
    assert "stopped" not in document
    assert 0 < len(document["cells"]) < document["summary"]["planned"]
