"""Cells: ids, and a replay command that works from any folder when the runtime or the
scenario is the user's own module."""

# ruff: noqa: SIM300
from __future__ import annotations

import os
import shlex
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from killpoint import kinds
from killpoint.values.cell import Cell
from killpoint.values.points import CrashPoint

POINT = (CrashPoint("after-checkpoint", 2),)
CELL = "reference/research/tool-batch/sqlite/after-checkpoint:2"
REPLAY = f"killpoint replay {CELL}"


def cell(runtime: str = "reference", scenario: str = "research", store: str = "sqlite") -> Cell:
    return Cell(runtime, scenario, "tool-batch", store, POINT)


def make_package(root: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A package of the user's own, importable from `root` (not installed)."""
    name = f"kp_user_{uuid.uuid4().hex[:8]}"
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    (root / name / "agents.py").write_text("def build():\n    return None\n")
    monkeypatch.syspath_prepend(str(root))
    return name


@pytest.fixture(autouse=True)
def _forget_user_packages() -> Iterator[None]:
    yield
    for module in [m for m in sys.modules if m.startswith("kp_user_")]:
        del sys.modules[module]


@pytest.fixture
def user_package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    return make_package(tmp_path, monkeypatch)


class TestIds:
    def test_an_id_parses_back_to_its_cell(self) -> None:
        assert CELL == cell().id
        assert cell() == kinds.parse_cell(CELL)


class TestReplayCommand:
    def test_built_in_references_replay_as_they_are(self) -> None:
        assert REPLAY == cell().replay_command()
        assert cell(scenario="random:7").replay_command().startswith("killpoint replay ")

    def test_a_postgresql_cell_names_the_store_by_variable_never_by_url(self) -> None:
        command = cell(store="postgresql").replay_command()
        assert command.endswith(' --store "$KILLPOINT_STORE"')

    def test_an_installed_or_unimportable_module_adds_no_pythonpath(self) -> None:
        assert not cell(runtime="psutil:Process").replay_command().startswith("PYTHONPATH")
        assert not cell(runtime="kp_no_such_module:build").replay_command().startswith("PYTHONPATH")

    def test_the_users_module_puts_its_import_root_on_pythonpath(
        self, user_package: str, tmp_path: Path
    ) -> None:
        command = cell(runtime=f"{user_package}.agents:build").replay_command()

        root = shlex.quote(str(tmp_path.resolve()))
        assert command.startswith(
            f"PYTHONPATH={root} killpoint replay {user_package}.agents:build/"
        )

    def test_each_import_root_is_named_once_in_order(
        self, user_package: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        other = make_package(tmp_path / "elsewhere", monkeypatch)
        both = cell(runtime=f"{user_package}.agents:build", scenario=f"{other}:FLOW")
        one = cell(runtime=f"{user_package}.agents:build", scenario=f"{user_package}:FLOW")

        roots = os.pathsep.join([str(tmp_path.resolve()), str((tmp_path / "elsewhere").resolve())])
        assert both.replay_command().startswith(f"PYTHONPATH={shlex.quote(roots)} killpoint")
        root = shlex.quote(str(tmp_path.resolve()))
        assert one.replay_command().startswith(f"PYTHONPATH={root} killpoint")


def test_a_results_json_view_dumps_as_its_json_and_copies_nothing() -> None:
    """The journal writes each cell once from its view: the same text as to_json() gives,
    without the deep copy (the view holds the cell's own findings)."""
    import json

    from killpoint.values.cell import CellResult
    from killpoint.values.timeline import Event

    result = CellResult(
        id=CELL, runtime="reference", scenario="research", mode="tool-batch", store="sqlite",
        schedule=["after-checkpoint:2"], verdict="diverged", expected=False,
        findings=[{"kind": "status-differs", "evidence": {"expected": "A", "actual": ("B",)}}],
        diff=[{"path": "runs.r1.status", "a": 1}], store_at_crash={"kp_runs": [[1, "x"]]},
        timeline=[Event(0.1, "gate tool:search", "tool", "tools")], exit_codes=[None, -9],
    )  # fmt: skip
    view = result.json_view()
    assert json.dumps(result.to_json(), sort_keys=True) == json.dumps(view, sort_keys=True)
    assert view["findings"] is result.findings
    assert [[0.1, "gate tool:search", "tool", "tools"]] == view["timeline"]
