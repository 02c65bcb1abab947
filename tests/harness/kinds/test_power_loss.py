"""The power-loss kind (killpoint.kinds.power_loss) end to end: real workers killed, the
store's folder on the FUSE filesystem cut to its durable image, then the usual cell.

Ground truth (SQLite documents it): with `synchronous=FULL` a power cut loses no
acknowledged commit, so no cell is unexpected; with `synchronous=NORMAL` (WAL) and `OFF`
the COMPLETED run the runtime returned is gone after the cut: acknowledged-lost."""

# ruff: noqa: SIM300

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import psutil
import pytest

from killpoint import kinds
from killpoint.engine.campaign import Campaign
from killpoint.engine.engine import Engine
from killpoint.engine.options import CampaignConfig, EngineConfig, parse_points
from killpoint.powerloss.availability import NO_FUSE_ENV
from killpoint.report.html import build_view, render_report
from killpoint.values.cell import Cell, CellResult
from killpoint.values.points import CrashPoint
from tests.harness.live_workers import assert_no_worker_alive, worker_pids
from tests.harness.powerloss.conftest import mounts_under, need_fuse

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[3]
NORMAL = "killpoint.adapters.reference:synchronous_normal"
OFF = "killpoint.adapters.reference:synchronous_off"


@pytest.fixture
def fuse() -> None:
    need_fuse("power-loss tests")


@pytest.fixture
def engine(tmp_path: Path, fuse: None) -> Any:
    """An engine whose cells live under tmp_path; after the test nothing is mounted there."""
    yield Engine(EngineConfig(work_root=tmp_path / "work", keep="none"))
    assert [] == mounts_under(tmp_path)


def run_points(engine: Engine, runtime: str, scenario: str, mode: str) -> list[CellResult]:
    row = (runtime, scenario, mode, "sqlite")
    base = engine.baseline(row)
    assert base.problem is None, base.problem
    points = kinds.points_of(base, kinds.groups()["power-loss"])
    # one per checkpoint (the last at the session's end), one per commit the runtime marks
    assert base.checkpoints == sum(1 for p in points if p.kind == "power-loss")
    assert base.checkpoints == sum(1 for p in points if p.kind == "power-loss-mid-commit")
    return [engine.run_cell(Cell(*row, schedule=(p,))) for p in points]


def cut_of(result: CellResult) -> dict[str, Any]:
    return (result.store_at_crash or {})["power_cut"]


class TestTheKind:
    def test_opt_in_not_in_the_default_set(self) -> None:
        """`--points power-loss` selects it; the default set ("all") does not mount FUSE."""
        group = ("power-loss", "power-loss-mid-commit")
        assert group == kinds.groups()["power-loss"] == parse_points("power-loss").kinds
        assert not set(group) & set(kinds.groups()["all"])

    def test_not_on_a_store_server(self) -> None:
        """A PostgreSQL server keeps its files out of the cell's folder: skipped, with why."""
        why = kinds.get("power-loss").unavailable("postgresql")
        assert why is not None and "sqlite" in why


@pytest.mark.slow
class TestGroundTruth:
    @pytest.mark.parametrize(
        ("scenario", "mode"), [("research", "tool-batch"), ("multi-run", "tool")]
    )
    def test_full_loses_nothing(self, engine: Engine, scenario: str, mode: str) -> None:
        """synchronous=FULL: every power-loss point (after each checkpoint, inside each
        commit) is expected, the cut took back no landed checkpoint, every WAL byte was
        synced, and no worker outlives its cell."""
        results = run_points(engine, "reference", scenario, mode)
        assert [] == [(r.id, r.verdict, r.detail) for r in results if not r.expected]
        kinds_found = {f["kind"] for r in results for f in r.findings}
        assert "checkpoints-lost" not in kinds_found
        for r in results:
            wal = cut_of(r)["files"]["store.db-wal"]
            assert 0 == wal["lost_bytes"] and wal["synced_bytes"] > 0, r.id
        codes = {r.schedule[0]: r.exit_codes[0] for r in results}
        last = max(kinds.parse_point(p).k for p in codes)
        assert -9 == codes["power-loss:1"] == codes[f"power-loss-mid-commit:{last}"]
        assert 0 == codes[f"power-loss:{last}"]  # the end: the worker returned and exited
        assert_no_worker_alive(worker_pids(results))

    @pytest.mark.parametrize("runtime", [NORMAL, OFF])
    def test_weaker_settings_lose_the_acknowledged_run(self, engine: Engine, runtime: str) -> None:
        """synchronous=NORMAL (WAL) and OFF: at the session's end the runtime has returned
        COMPLETED, and after the cut the store does not hold it: acknowledged-lost,
        unexpected; the cut report says which bytes were lost."""
        row = (runtime, "research", "tool-batch", "sqlite")
        base = engine.baseline(row)
        last = CrashPoint("power-loss", base.checkpoints)
        result = engine.run_cell(Cell(*row, schedule=(last,)))
        assert ("lost", False) == (result.verdict, result.expected)
        lost = [f for f in result.findings if f["kind"] == "acknowledged-lost"]
        assert 1 == len(lost) and "returned COMPLETED" in lost[0]["sentence"]
        assert {"checkpoints-lost", "acknowledged-lost"} <= {f["kind"] for f in result.findings}
        cut = cut_of(result)
        assert cut["lost_bytes"] > 0
        assert any(f["lost_bytes"] > 0 for p, f in cut["files"].items() if p.endswith("-wal"))
        assert any(e.text.startswith("cut: store.db") for e in result.timeline)

    def test_normal_mid_run_takes_back_landed_checkpoints(self, engine: Engine) -> None:
        """NORMAL: a cut mid-run takes back checkpoints that had landed (never synced)."""
        row = (NORMAL, "research", "tool-batch", "sqlite")
        engine.baseline(row)
        result = engine.run_cell(Cell(*row, schedule=(CrashPoint("power-loss", 2),)))
        took = [f for f in result.findings if f["kind"] == "checkpoints-lost"]
        assert 1 == len(took) and (2, 0) == (took[0]["expected_value"], took[0]["actual_value"])


class TestCutModels:
    def cut_cell(self, tmp_path: Path, cut: str, runtime: str = NORMAL) -> CellResult:
        """The last power-loss point of a NORMAL run (its WAL never synced: unsynced
        writes for the model to choose from), in an engine whose campaign cuts so."""
        engine = Engine(EngineConfig(work_root=tmp_path / cut, keep="none", cut=cut))
        row = (runtime, "research", "tool-batch", "sqlite")
        base = engine.baseline(row)
        assert base.problem is None, base.problem
        result = engine.run_cell(Cell(*row, schedule=(CrashPoint("power-loss", base.checkpoints),)))
        assert [] == mounts_under(tmp_path)
        return result

    def test_the_campaigns_cut_model_cuts_each_cell_with_a_seed_of_its_own(
        self, tmp_path: Path, fuse: None
    ) -> None:
        """`--cut torn-seq`: the evidence names the model and the cell's seed, the timeline
        says which cut it was, some of the WAL's unsynced writes are kept and some dropped,
        and the replay command carries the option."""
        from killpoint.powerloss.cut_models import cell_seed

        result = self.cut_cell(tmp_path, "torn-seq")
        cut = cut_of(result)
        assert {"name": "torn-seq", "seed": cell_seed(f"{result.id} torn-seq")} == cut["model"]
        wal = {o["fate"] for o in cut["ops"] if o["path"] == "store.db-wal" and o["op"] == "write"}
        assert {"kept", "dropped"} == wal
        faults = [e.text for e in result.timeline if e.text.startswith("power cut")]
        assert [f"power cut (torn-seq, seed {cut['model']['seed']}): the store keeps what was "
                "synced and a seeded subset of the writes since"] == faults  # fmt: skip
        assert result.replay.endswith(f"replay {result.id} --cut torn-seq")

    def test_the_same_cell_cuts_the_same_operations(self, tmp_path: Path, fuse: None) -> None:
        """Deterministic: the same cell and model keep, tear and drop the same operations."""
        fates = [
            [(o["op"], o["path"], o["offset"], o["length"], o["fate"], o["kept"])
             for o in cut_of(self.cut_cell(tmp_path / str(n), "torn-op"))["ops"]]
            for n in range(2)
        ]  # fmt: skip
        assert fates[0] == fates[1]
        assert any(op[4] == "torn" for op in fates[0]), fates[0]

    @pytest.mark.slow
    def test_the_pytest_plugin_cuts_with_crash_cut(
        self, pytester: pytest.Pytester, fuse: None
    ) -> None:
        """`--crash-cut reorder` reaches the plugin's cells: the JSON's power-loss cell was
        cut by that model, and its replay command says so."""
        out = pytester.path / "m.json"
        result = pytester.runpytest_subprocess(
            "-p", "no:randomly", "--crash-matrix", "--crash-scenarios=research",
            "--crash-modes=tool-batch", "--crash-points=power-loss:1", "--crash-cut=reorder",
            f"--crash-json={out}", timeout=240,
        )  # fmt: skip
        result.assert_outcomes(passed=1)
        [cell] = json.loads(out.read_text())["cells"]
        assert "reorder" == cell["store_at_crash"]["power_cut"]["model"]["name"]
        assert cell["replay"].endswith("--cut reorder")

    def test_the_default_cut_is_as_before(self, tmp_path: Path, fuse: None) -> None:
        """synced: the words and the replay command of a power-loss cell are unchanged."""
        result = self.cut_cell(tmp_path, "synced", runtime="reference")
        assert "power cut: the store keeps what was synced" in [e.text for e in result.timeline]
        assert result.replay.endswith(f"replay {result.id}")
        assert {"name": "synced", "seed": cut_of(result)["model"]["seed"]} == cut_of(result)[
            "model"
        ]


class TestWithoutFuse:
    def test_cells_are_skipped_with_the_reason(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Where FUSE is missing the power-loss points of each row are skipped with the
        reason, never run, failed nor passed; the other kinds of the selection still run."""
        monkeypatch.setenv(NO_FUSE_ENV, "1")
        config = CampaignConfig.from_options(
            scenarios=("research",),
            modes=("tool-batch",),
            points="power-loss,after-checkpoint:1",
            work_root=tmp_path / "work",
            workers=1,
        )
        result = Campaign(config).run()
        assert ["after-checkpoint:1"] == [s for c in result.cells for s in c.schedule]
        assert [("research", "tool-batch")] == [(s.scenario, s.mode) for s in result.skipped]
        assert result.skipped[0].reason.startswith(
            f"power-loss, power-loss-mid-commit points: {NO_FUSE_ENV} is set"
        )

    def test_replay_says_skipped(self, tmp_path: Path) -> None:
        """`killpoint replay` of a power-loss cell without FUSE: one line, exit 0, no run."""
        done = subprocess.run(
            [sys.executable, "-m", "killpoint.cli.main", "replay",
             "reference/research/tool-batch/sqlite/power-loss:2", "--work-dir", str(tmp_path)],
            cwd=REPO, capture_output=True, text=True, timeout=120,
            env={**os.environ, NO_FUSE_ENV: "1"},
        )  # fmt: skip
        assert (0, "") == (done.returncode, done.stderr)
        assert done.stdout.startswith(
            "reference/research/tool-batch/sqlite/power-loss:2: skipped, power-loss points "
            f"cannot run here: {NO_FUSE_ENV} is set"
        )
        assert [] == list(tmp_path.iterdir())  # no baseline ran

    @pytest.mark.slow
    def test_the_pytest_plugin_skips_them(
        self, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Under the pytest plugin the row's power-loss points are one skipped item that
        says why; the other points of the selection run."""
        monkeypatch.setenv(NO_FUSE_ENV, "1")
        result = pytester.runpytest_subprocess(
            "-p", "no:randomly", "-rs", "--crash-matrix", "--crash-scenarios=research",
            "--crash-modes=tool-batch", "--crash-points=power-loss,after-checkpoint:1",
            timeout=240,
        )  # fmt: skip
        result.assert_outcomes(passed=1, skipped=1)
        result.stdout.fnmatch_lines(
            [f"SKIPPED*power-loss, power-loss-mid-commit points: {NO_FUSE_ENV} is set*"]
        )


def document_with(cell: dict[str, Any]) -> dict[str, Any]:
    return {"runtime": "reference", "store": "sqlite", "cells": [cell], "summary": {"cells": 1}}


CUT: dict[str, Any] = {
    "image": "/w/store.image",
    "tear": None,
    "synced_bytes": 4128,
    "lost_bytes": 173040,
    "files": {
        "store.db": {"path": "store.db", "entry": "durable", "live_bytes": 4096,
                     "synced_bytes": 4096, "lost_bytes": 0, "syncs": 1, "torn_bytes": 0},
        "store.db-wal": {"path": "store.db-wal", "entry": "durable", "live_bytes": 173072,
                         "synced_bytes": 32, "lost_bytes": 173040, "syncs": 1,
                         "torn_bytes": 0},
    },
    "skipped": [],
}  # fmt: skip


class TestReport:
    def cell(self) -> dict[str, Any]:
        return {
            "id": "reference/research/tool-batch/sqlite/power-loss:5",
            "runtime": "reference",
            "scenario": "research",
            "mode": "tool-batch",
            "store": "sqlite",
            "schedule": ["power-loss:5"],
            "verdict": "lost",
            "expected": False,
            "store_at_crash": {"checkpoints": 0, "runs": [], "power_cut": copy.deepcopy(CUT)},
        }

    def test_the_cut_is_drawn_with_the_store(self) -> None:
        """The detail panel's data holds each file's synced and lost bytes; the column
        group carries the kind's meaning from the registry."""
        view = build_view(document_with(self.cell()))
        cut = view["data"]["cells"][0]["store"]["cut"]
        strings = view["data"]["strings"]
        assert (4128, 173040) == (cut["synced"], cut["lost"])
        assert [
            ["store.db", "durable", 4096, 0, 4096, 1, 0],
            ["store.db-wal", "durable", 32, 173040, 173072, 1, 0],
        ] == [[strings[f[0]], *f[1:]] for f in cut["files"]]
        assert kinds.get("power-loss").meaning == view["groups"][0].title
        assert "The power cut left each file" in render_report(document_with(self.cell()))

    def test_a_cut_models_name_and_what_it_kept_are_drawn(self) -> None:
        """A cut other than synced: the panel names the model and lists each operation it
        kept or tore (not the dropped ones), each path escaped."""
        cell = self.cell()
        evil = "<b>wal</b>"
        ops = [
            {"seq": 3, "op": "write", "path": evil, "offset": 32, "length": 4120,
             "fate": "kept", "kept": 4120},
            {"seq": 4, "op": "write", "path": evil, "offset": 4152, "length": 4120,
             "fate": "dropped", "kept": 0},
            {"seq": 5, "op": "write", "path": "store.db", "offset": 0, "length": 4096,
             "fate": "torn", "kept": 512},
        ]  # fmt: skip
        cell["store_at_crash"]["power_cut"] = {**CUT, "cut": "torn-seq, seed 7", "ops": ops}
        view = build_view(document_with(cell))
        cut = view["data"]["cells"][0]["store"]["cut"]
        strings = view["data"]["strings"]
        assert "torn-seq, seed 7" == strings[cut["model"]]
        assert [
            "#3 write <b>wal</b> @32+4120: kept",
            "#5 write store.db @0+4096: torn (first 512 bytes)",
        ] == [strings[i] for i in cut["landed"]]
        assert evil not in render_report(document_with(cell))
        plain = build_view(document_with(self.cell()))["data"]
        assert "synced" == plain["strings"][plain["cells"][0]["store"]["cut"]["model"]]

    def test_a_file_name_is_escaped(self) -> None:
        """A file name is run content: written as text, never as markup."""
        cell = self.cell()
        evil = "<img src=x onerror=alert(1)>"
        cell["store_at_crash"]["power_cut"] = {
            **CUT,
            "files": {evil: {**CUT["files"]["store.db"], "path": evil}},
        }
        html = render_report(document_with(cell))
        assert evil not in html

    def test_every_registered_kind_has_a_meaning_and_a_label(self) -> None:
        for kind in kinds.REGISTRY.values():
            assert kind.meaning and kind.label, kind.name


@pytest.mark.slow
def test_the_command(tmp_path: Path, fuse: None) -> None:
    """`killpoint matrix --points power-loss` writes JSON with a cell per point, each with
    its cut report, exits 0 on the reference runtime, and leaves no process and no mount."""
    tag = uuid.uuid4().hex
    out = tmp_path / "m.json"
    done = subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "matrix", "--points", "power-loss",
         "--scenarios", "research", "--modes", "tool-batch", "--json", str(out),
         "--report", str(tmp_path / "m.html"), "--work-dir", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=300,
        env={**os.environ, "KILLPOINT_TEST_TAG": tag},
    )  # fmt: skip
    cells = json.loads(out.read_text())["cells"]
    unexpected = [(c["id"], c["detail"], c["timeline"]) for c in cells if not c["expected"]]
    assert (0, []) == (done.returncode, unexpected), done.stderr
    assert cells and all(c["schedule"][0].startswith("power-loss") for c in cells)
    assert all(c["store_at_crash"]["power_cut"]["files"]["store.db"] for c in cells)
    assert [] == mounts_under(tmp_path)
    assert [] == tagged(tag)


def tagged(tag: str) -> list[str]:
    """Processes that inherited KILLPOINT_TEST_TAG=tag (every descendant of the command)."""
    found = []
    for p in psutil.process_iter(["pid", "name"]):
        try:
            if p.environ().get("KILLPOINT_TEST_TAG") == tag:
                found.append(f"{p.pid} {p.info['name']}")
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


class TestImageProblem:
    def test_a_sound_image_a_missing_one_and_a_malformed_one(self, tmp_path: Path) -> None:
        """What the kind checks before the adapter reads the image: a sound database and a
        missing file (an empty store) pass; a file SQLite cannot read is named."""
        import sqlite3

        from killpoint.kinds.power_loss import image_problem

        sound = tmp_path / "sound.db"
        conn = sqlite3.connect(sound)
        conn.execute("CREATE TABLE t(v)")
        conn.commit()
        conn.close()
        garbage = tmp_path / "garbage.db"
        garbage.write_bytes(b"SQLite format 3\0" + b"\xff" * 4080)

        assert (None, None) == (image_problem(sound), image_problem(tmp_path / "none.db"))
        assert "SQLite: " in (image_problem(garbage) or "")
