"""What a failed cell says: every line of the message, and a replay command that works
from any directory when the runtime or scenario is the user's own module."""

# ruff: noqa: SIM300
from __future__ import annotations

import os
import shlex
import sys
import uuid
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest

from harness.cell import CellResult
from harness.failure_messages import cell_failure, difference_text, replay_line
from harness.timeline import Event

CELL = "reference/research/tool-batch/sqlite/after-checkpoint:2"
REPLAY = f"killpoint replay {CELL}"
BARE = CellResult(
    id=CELL,
    runtime="reference",
    scenario="research",
    mode="tool-batch",
    store="sqlite",
    schedule=["after-checkpoint:2"],
    verdict="missed",
    expected=False,
    replay=REPLAY,
)


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


def test_built_in_references_replay_as_they_are() -> None:
    assert REPLAY == replay_line(BARE)
    assert REPLAY == replay_line(replace(BARE, scenario="random:7"))


def test_an_installed_or_unimportable_module_adds_no_pythonpath() -> None:
    assert REPLAY == replay_line(replace(BARE, runtime="psutil:Process"))
    assert REPLAY == replay_line(replace(BARE, runtime="kp_no_such_module:build"))


def test_the_users_module_puts_its_import_root_on_pythonpath(
    user_package: str, tmp_path: Path
) -> None:
    result = replace(BARE, runtime=f"{user_package}.agents:build")

    root = shlex.quote(str(tmp_path.resolve()))
    assert f"PYTHONPATH={root} {REPLAY}" == replay_line(result)


def test_each_import_root_is_named_once_in_order(
    user_package: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    other = make_package(tmp_path / "elsewhere", monkeypatch)
    both = replace(BARE, runtime=f"{user_package}.agents:build", scenario=f"{other}:FLOW")
    one = replace(BARE, runtime=f"{user_package}.agents:build", scenario=f"{user_package}:FLOW")

    roots = os.pathsep.join([str(tmp_path.resolve()), str((tmp_path / "elsewhere").resolve())])
    assert f"PYTHONPATH={shlex.quote(roots)} {REPLAY}" == replay_line(both)
    assert f"PYTHONPATH={shlex.quote(str(tmp_path.resolve()))} {REPLAY}" == replay_line(one)


def test_every_line_of_a_failed_cell() -> None:
    result = replace(
        BARE,
        verdict="diverged",
        detail="the resumed run ended RUNNING",
        first_difference={
            "path": "session.runs[0].status",
            "baseline": "COMPLETED",
            "actual": "RUNNING",
        },
        duplicates=3,
        bound=1,
        kept="/tmp/kept/00001",
        stderr_tail="\nstarting\nTraceback (most recent call last)\n\n",
    )

    assert [
        f"killpoint: {CELL}",
        "  verdict:          diverged (unexpected for tool-batch at after-checkpoint:2)",
        "  detail:           the resumed run ended RUNNING",
        "  first difference: session.runs[0].status: baseline 'COMPLETED', resumed 'RUNNING'",
        "  duplicates:       3 (bound 1)",
        f"  replay:           {REPLAY}",
        "  seed:             5 (--crash-seed 5)",
        "  kept:             /tmp/kept/00001 (store, ledger, worker logs)",
        "  worker stderr (tail):",
        "    starting",
        "    Traceback (most recent call last)",
    ] == cell_failure(result, 5).splitlines()


def test_a_bare_cell_says_dash_and_leaves_out_what_it_lacks() -> None:
    lines = cell_failure(replace(BARE, schedule=["after-checkpoint:1", "after-checkpoint:2"]), 9)

    assert (
        "  verdict:          missed (unexpected for tool-batch at after-checkpoint:1+after-checkpoint:2)"
        in lines.splitlines()
    )
    assert "  detail:           -" in lines.splitlines()
    assert "  first difference: -" in lines.splitlines()
    assert "  seed:             9 (--crash-seed 9)" == lines.splitlines()[-1]


def test_only_the_last_twenty_stderr_lines_are_shown() -> None:
    tail = "\n".join(f"line {n}" for n in range(1, 26))

    lines = cell_failure(replace(BARE, stderr_tail=tail), 1).splitlines()

    assert "    line 6" == lines[lines.index("  worker stderr (tail):") + 1]
    assert "    line 25" == lines[-1]
    assert 20 == sum(1 for line in lines if line.startswith("    line "))


def test_the_difference_reads_path_then_both_values() -> None:
    diff = {"path": "session.state.n", "baseline": 1, "actual": 2}

    assert "session.state.n: baseline 1, resumed 2" == difference_text(
        replace(BARE, first_difference=diff)
    )
    assert "-" == difference_text(BARE)


def test_the_last_fifteen_timeline_events_are_shown() -> None:
    events = [Event(n / 100, f"event {n}", "other", "harness") for n in range(1, 21)]

    lines = cell_failure(replace(BARE, timeline=events), 1).splitlines()

    shown = lines[lines.index("  timeline:") + 1 :]
    assert "      0.0600s  event 6" == shown[0]
    assert "      0.2000s  event 20" == shown[14]
    assert 15 == sum(1 for line in shown if "s  event " in line)
