"""fs-op points (killpoint.kinds.fs_ops) end to end: baselines on the power-loss mount
record each store-file operation with its checkpoint; a cell's worker is SIGKILLed while
the server holds one of them; the reference runtime (SQLite WAL, synchronous=FULL)
survives a process crash at any of them."""

# ruff: noqa: SIM300

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from killpoint import kinds
from killpoint.engine.campaign import Campaign
from killpoint.engine.engine import Engine
from killpoint.engine.options import CampaignConfig, EngineConfig
from killpoint.errors import OptionError
from killpoint.judge.baseline import Baseline
from killpoint.kinds.fs_ops import planned_ops, within
from killpoint.powerloss.availability import NO_FUSE_ENV
from killpoint.powerloss.op_trace import TracedOp
from killpoint.values.cell import Cell
from killpoint.values.points import CrashPoint
from tests.harness.kinds.test_power_loss import tagged
from tests.harness.live_workers import assert_no_worker_alive, worker_pids
from tests.harness.powerloss.conftest import mounts_under, need_fuse

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[3]
ROW = ("reference", "research", "tool-batch", "sqlite")


@pytest.fixture
def fuse() -> None:
    need_fuse("fs-op tests")


@pytest.fixture
def engine(tmp_path: Path, fuse: None) -> Any:
    yield Engine(EngineConfig(work_root=tmp_path / "work", keep="none", fs_trace=True))
    assert [] == mounts_under(tmp_path)


def op(k: int, n: int, kind: str = "write", file: str = "store.db-wal") -> dict[str, Any]:
    return TracedOp(k, n, kind, file).to_json()


def landed(n: int) -> list[str]:
    return [f"checkpoint:{i}:landed" for i in range(1, n + 1)]


class TestPlanning:
    def test_only_the_operations_both_runs_made_alike_are_planned(self) -> None:
        """Checkpoint 2's runs part at operation 1 (a different file): 0 is planned, 1 and
        2 are not; operations after the last checkpoint landed are not either."""
        mine = [op(1, 0), op(1, 1, "fdatasync"), op(2, 0), op(2, 1), op(2, 2), op(3, 0)]
        theirs = [op(1, 0), op(1, 1, "fdatasync"), op(2, 0), op(2, 1, file="x"), op(2, 2)]
        base = Baseline(*ROW, trace=landed(2), other_trace=landed(2))
        base.fs_ops, base.other_fs_ops = mine, theirs
        assert [(1, 0), (1, 1), (2, 0)] == sorted(planned_ops(base))
        assert [
            CrashPoint("fs-op", 1, 0),
            CrashPoint("fs-op", 1, 1),
            CrashPoint("fs-op", 2, 0),
        ] == (kinds.points_of(base, ["fs-op"]))
        base.fs_budget = "syncs"
        assert [CrashPoint("fs-op-after", 1, 1)] == kinds.points_of(base, ["fs-op-after"])

    def test_a_budget_spreads_its_points_from_the_first_to_the_last(self) -> None:
        ops = [TracedOp(1, n, "write", "f") for n in range(10)]
        assert [0, 9] == [o.n for o in within(ops, "2")]
        assert [0, 3, 6, 9] == [o.n for o in within(ops, "4")]
        assert 10 == len(within(ops, "50")) == len(within(ops, "all"))

    def test_a_bad_budget_is_named_with_the_fix(self) -> None:
        with pytest.raises(OptionError, match=r"'none'.*all, syncs or a whole number"):
            CampaignConfig.from_options(fs_ops="none")

    def test_the_baseline_is_traced_only_when_fs_op_points_are_selected(self) -> None:
        assert not CampaignConfig.from_options(points="kills").engine_config().fs_trace
        assert CampaignConfig.from_options(points="fs-ops").engine_config().fs_trace
        assert CampaignConfig.from_options(points="fs-op:2:3").engine_config().fs_trace
        assert "fs-op" not in kinds.groups()["all"]

    def test_without_fuse_the_points_are_skipped_with_the_reason(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv(NO_FUSE_ENV, "1")
        config = CampaignConfig.from_options(
            scenarios=("research",),
            modes=("tool-batch",),
            points="fs-ops,after-checkpoint:1",
            work_root=tmp_path / "work",
            workers=1,
        )
        result = Campaign(config).run()
        assert ["after-checkpoint:1"] == [s for c in result.cells for s in c.schedule]
        assert result.skipped[0].reason.startswith(
            f"fs-op, fs-op-after points: {NO_FUSE_ENV} is set"
        )


@pytest.mark.slow
class TestCells:
    def test_the_baselines_trace_every_checkpoint_alike(self, engine: Engine) -> None:
        """Both runs make the same operations per checkpoint; each checkpoint of the
        session has some, and the WAL's commits are fdatasyncs."""
        base = engine.baseline(ROW)
        assert base.problem is None, base.problem
        per = [[o for o in base.fs_ops if o["checkpoint"] == k] for k in range(1, 6)]
        assert 5 == base.checkpoints and all(per)
        assert [(o["kind"], o["file"]) for o in base.fs_ops] == [
            (o["kind"], o["file"]) for o in base.other_fs_ops
        ]
        assert ("fdatasync", "store.db-wal") in {(o["kind"], o["file"]) for o in per[1]}

    @pytest.mark.parametrize("kind", ["fs-op", "fs-op-after"])
    def test_a_kill_at_checkpoint_2s_commit_sync(self, engine: Engine, kind: str) -> None:
        """Killed at checkpoint 2's last fdatasync of the WAL: the held operation is the
        baseline's, the worker died of SIGKILL, and the cell is expected."""
        base = engine.baseline(ROW)
        syncs = [o for o in base.fs_ops if o["checkpoint"] == 2 and o["kind"] == "fdatasync"]
        n = syncs[-1]["n"]
        result = engine.run_cell(Cell(*ROW, schedule=(CrashPoint(kind, 2, n),)))
        assert result.expected, result.detail
        evidence = result.store_at_crash["fs_op"]
        assert (2, n, "fdatasync", "store.db-wal") == (
            evidence["checkpoint"],
            evidence["n"],
            evidence["kind"],
            evidence["file"],
        )
        assert ("after" if kind == "fs-op-after" else "before") == evidence["when"]
        assert -9 == result.exit_codes[0]
        said = f"killed {evidence['when']} fdatasync of store.db-wal"
        assert any(said in event.text for event in result.timeline)
        assert_no_worker_alive(worker_pids([result]))


@pytest.mark.slow
def test_the_command(tmp_path: Path, fuse: None) -> None:
    """`killpoint matrix --points fs-ops --fs-ops 2` on the reference runtime: 0 unexpected,
    every cell killed at an operation its evidence names; no process, no mount left."""
    tag = uuid.uuid4().hex
    out = tmp_path / "m.json"
    done = subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "matrix", "--points", "fs-ops",
         "--fs-ops", "2", "--scenarios", "research", "--modes", "tool-batch",
         "--json", str(out), "--work-dir", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os.environ, "KILLPOINT_TEST_TAG": tag},
    )  # fmt: skip
    cells = json.loads(out.read_text())["cells"]
    unexpected = [(c["id"], c["detail"], c["timeline"]) for c in cells if not c["expected"]]
    assert (0, []) == (done.returncode, unexpected), done.stderr
    assert 20 == len(cells)  # 5 checkpoints, 2 operations each, before and after
    # Each cell held the operation its baseline made there (the same kind and file).
    assert all(c["store_at_crash"]["fs_op"]["alike"] for c in cells)
    assert [] == mounts_under(tmp_path)
    assert [] == tagged(tag)


@pytest.mark.slow
def test_replay_runs_the_point_again(tmp_path: Path, fuse: None) -> None:
    """`killpoint replay` of an fs-op cell traces its baseline on the mount and kills the
    worker at the same operation: its timeline names it."""
    done = subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "replay",
         "reference/research/tool-batch/sqlite/fs-op:2:0", "--work-dir", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert 0 == done.returncode, done.stdout + done.stderr
    assert "killed before write of store.db-wal at offset" in done.stdout
    assert "verdict: ok, expected" in done.stdout
    assert [] == mounts_under(tmp_path)


@pytest.mark.slow
def test_the_pytest_plugin_runs_them(pytester: pytest.Pytester, fuse: None) -> None:
    """`--crash-points fs-ops --crash-fs-ops 1`: one point per checkpoint and kind (the
    last operation of each), 10 items, every one passing."""
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "--crash-matrix", "--crash-scenarios=research",
        "--crash-modes=tool-batch", "--crash-points=fs-ops", "--crash-fs-ops=1",
        timeout=240,
    )  # fmt: skip
    result.assert_outcomes(passed=10)


def test_the_pytest_plugin_refuses_a_bad_budget(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--crash-matrix", "--crash-fs-ops=some", timeout=120)
    assert 0 != result.ret
    result.stderr.fnmatch_lines(["*--crash-fs-ops*'some'*all, syncs or a whole number*"])
