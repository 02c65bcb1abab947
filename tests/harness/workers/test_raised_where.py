"""Where a worker's exception came from (killpoint.workers.raised_where): which part of the
adapter's contract ran, and the innermost line of the user's own code. A user's adapter
whose driver() raised was reported as a cell the engine could not reach ("missed", a
harness defect), and the line that raised was cut from the message. So was a run that
raised once it began, which is the runtime's or its adapter's run code ("run-failed")."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

ADAPTERS = """\
from killpoint.adapters.reference import ReferenceAdapter


def fail(what):
    raise RuntimeError(f"boom in {what}")


class DriverRaises(ReferenceAdapter):
    def driver(self, *args, **kwargs):
        fail("driver")


class InstrumentRaises(ReferenceAdapter):
    def instrument(self, gates):
        fail("instrument")


class RunRaises(ReferenceAdapter):
    def driver(self, *args, **kwargs):
        driver = super().driver(*args, **kwargs)

        async def start(*args, **kwargs):
            fail("start")

        driver.start = start
        return driver


class HarnessRaises(ReferenceAdapter):
    def driver(self, *args, **kwargs):
        driver = super().driver(*args, **kwargs)

        async def start(*args, **kwargs):
            from killpoint.values.durations import duration

            duration("soon")  # raises inside killpoint's own code

        driver.start = start
        return driver


def harness_raises():
    return HarnessRaises()


def driver_raises():
    return DriverRaises()


def run_raises():
    return RunRaises()


def instrument_raises():
    return InstrumentRaises()
"""


@pytest.mark.slow
@pytest.mark.parametrize(
    ("factory", "stage", "line"),
    [
        ("driver_raises", "the adapter's driver()", "raising_adapter.py:5, in fail"),
        ("instrument_raises", "the adapter's instrument()", "raising_adapter.py:5, in fail"),
    ],
)
def test_an_adapter_that_raises_is_named_with_its_line(
    tmp_path: Path, factory: str, stage: str, line: str
) -> None:
    done = _matrix(tmp_path, factory)
    assert 1 == done.returncode, done.stdout + done.stderr
    (cell,) = json.loads((tmp_path / "a.json").read_text())["cells"]
    assert "adapter-error" == cell["verdict"]
    (baseline,) = json.loads((tmp_path / "a.json").read_text())["baselines"]
    assert baseline["problem"].startswith(
        f"{stage} raised before the run began: RuntimeError: boom in "
        f"{factory.split('_')[0]} (at {line})"
    ), baseline["problem"]
    assert "missed" not in done.stdout


@pytest.mark.slow
def test_a_run_that_raises_is_run_failed_not_missed(tmp_path: Path) -> None:
    """The uninterrupted run raised in the adapter's run code: the row is the runtime's or
    its adapter's to mend, never "missed" (which the report calls killpoint's defect)."""
    done = _matrix(tmp_path, "run_raises")
    assert 1 == done.returncode, done.stdout + done.stderr
    document = json.loads((tmp_path / "a.json").read_text())
    (cell,) = document["cells"]
    assert ("run-failed", False) == (cell["verdict"], cell["expected"])
    (baseline,) = document["baselines"]
    assert baseline["problem"].startswith(
        "the baseline run failed (error): RuntimeError: boom in start "
        "(at raising_adapter.py:5, in fail)"
    ), baseline["problem"]
    page = (tmp_path / "a.html").read_text()
    assert "harness defect" not in page.split('id="legend"')[0]  # no "missed" banner
    assert "missed" not in done.stdout


@pytest.mark.slow
def test_a_run_that_raised_in_killpoints_own_code_is_not_called_the_runtimes(
    tmp_path: Path,
) -> None:
    """run-failed says "their defect, not killpoint's": an exception raised inside
    killpoint's own code while the run ran does not earn that claim, whoever called it."""
    done = _matrix(tmp_path, "harness_raises")
    (cell,) = json.loads((tmp_path / "a.json").read_text())["cells"]
    assert "missed" == cell["verdict"], done.stdout


def _matrix(tmp_path: Path, factory: str) -> subprocess.CompletedProcess[str]:
    (tmp_path / "raising_adapter.py").write_text(ADAPTERS)
    return subprocess.run(
        [
            sys.executable, "-m", "killpoint.cli.main", "matrix",
            "--runtime", f"raising_adapter:{factory}", "--scenarios", "research",
            "--modes", "tool-batch", "--points", "after-checkpoint:1",
            "--json", "a.json", "--report", "a.html",
        ],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])},
    )  # fmt: skip
