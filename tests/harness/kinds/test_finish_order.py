# ruff: noqa: SIM300 - tests assert `expected == actual`
"""finish-order points: the order a parallel batch's calls finish in, chosen by the plan.
The reference runtime passes every order; a runtime that keeps results in completion order
fails exactly the cells whose order is not call order, every time, and a failing cell
replays (real workers, real SQLite)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from killpoint import kinds
from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig
from killpoint.values.cell import Cell
from killpoint.values.points import CrashPoint

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
BROKEN = "tests.harness.broken_runtimes:completion_order"
ROW = ("parallel-fetch", "tool-batch", "sqlite")


def engine(tmp_path: Path, name: str) -> Engine:
    return Engine(EngineConfig(work_root=tmp_path / name.replace(":", "_"), keep="none"))


def test_every_other_order_of_each_batch_of_three_is_planned(tmp_path: Path) -> None:
    base = engine(tmp_path, "plan").baseline(("reference", *ROW))
    assert [f"finish-order:{k}:{i}" for k in (1, 2) for i in range(1, 6)] == [
        str(p) for p in kinds.points_of(base, ("finish-order",))
    ]


def test_the_reference_runtime_passes_every_order(tmp_path: Path) -> None:
    host = engine(tmp_path, "reference")
    for i in range(1, 6):
        cell = Cell("reference", *ROW, schedule=(CrashPoint("finish-order", 2, i),))
        result = host.run_cell(cell)
        assert ("ok", True) == (result.verdict, result.expected), (cell.id, result.detail)


def test_results_kept_in_completion_order_fail_every_other_order_and_only_those(
    tmp_path: Path,
) -> None:
    """Call order passes (the baseline's and every other cell's); each other order fails,
    and so does nothing that was planned before (a kill, then a resumer whose batch taken
    from the store finishes in call order too)."""
    host = engine(tmp_path, "broken")
    row = (BROKEN, *ROW)
    failing = []
    for point in ["finish-order:2:1", "finish-order:2:4", "after-checkpoint:1", "mid-batch:2:0"]:
        result = host.run_cell(Cell(*row, schedule=(kinds.parse_point(point),)))
        if not result.expected:
            failing.append((point, {f["kind"] for f in result.findings}))
    assert [
        ("finish-order:2:1", {"messages-differ"}),
        ("finish-order:2:4", {"messages-differ"}),
    ] == failing


def test_a_failing_order_replays_ten_times_out_of_ten(tmp_path: Path) -> None:
    """`killpoint matrix` finds the flipped cell; `killpoint replay --repeat 10` against its
    report reproduces it every time."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    report = tmp_path / "report.json"
    matrix = subprocess.run(
        [
            sys.executable, "-m", "killpoint.cli.main", "matrix", "--runtime", BROKEN,
            "--scenarios", ROW[0], "--modes", ROW[1], "--points", "finish-order:2:5",
            "--keep", "none", "--seed", "1", "--json", str(report),
            "--report", str(tmp_path / "report.html"), "--work-dir", str(tmp_path), "-q",
        ],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600, check=False,
    )  # fmt: skip
    assert 1 == matrix.returncode, matrix.stdout + matrix.stderr
    (cell,) = json.loads(report.read_text())["cells"]
    assert ("diverged", False) == (cell["verdict"], cell["expected"])
    replay = subprocess.run(
        [
            sys.executable, "-m", "killpoint.cli.main", "replay", cell["id"], "--json", str(report),
            "--repeat", "10", "--work-dir", str(tmp_path),
        ],
        capture_output=True, text=True, env=env, cwd=tmp_path, timeout=900, check=False,
    )  # fmt: skip
    assert "reproduced 10 of 10" in replay.stdout + replay.stderr, replay.stdout + replay.stderr
