"""Where a worker's exception came from (killpoint.workers.raised_where): which part of the
adapter's contract ran, and the innermost line of the user's own code. A user's adapter
whose driver() raised was reported as a cell the engine could not reach ("missed", a
harness defect), and the line that raised was cut from the message."""

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


def driver_raises():
    return DriverRaises()


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
    (tmp_path / "raising_adapter.py").write_text(ADAPTERS)
    done = subprocess.run(
        [
            sys.executable, "-m", "killpoint.cli.main", "matrix",
            "--runtime", f"raising_adapter:{factory}", "--scenarios", "research",
            "--modes", "tool-batch", "--points", "after-checkpoint:1",
            "--json", "a.json", "--report", "a.html",
        ],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(REPO)])},
    )  # fmt: skip
    assert 1 == done.returncode, done.stdout + done.stderr
    (cell,) = json.loads((tmp_path / "a.json").read_text())["cells"]
    assert "adapter-error" == cell["verdict"]
    (baseline,) = json.loads((tmp_path / "a.json").read_text())["baselines"]
    assert baseline["problem"].startswith(
        f"{stage} raised before the run began: RuntimeError: boom in "
        f"{factory.split('_')[0]} (at {line})"
    ), baseline["problem"]
    assert "missed" not in done.stdout
