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

from killpoint.workers.raised_where import innermost

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


def test_the_innermost_line_is_the_users_not_the_harness_or_a_librarys(tmp_path: Path) -> None:
    (tmp_path / "users_code.py").write_text(
        "import json\n\ndef parse():\n    return json.loads('{')\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        import users_code  # type: ignore[import-not-found]

        with pytest.raises(ValueError) as raised:
            users_code.parse()
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("users_code", None)
    where = innermost(raised.tb)
    assert where is not None and where.endswith("users_code.py:4, in parse"), where


def test_a_traceback_of_the_harness_alone_names_no_line() -> None:
    from killpoint.values.durations import duration

    with pytest.raises(Exception) as raised:
        duration("--budget", "soon")
    # Only this test's frame is outside the harness: it is the line named.
    assert (innermost(raised.tb) or "").endswith(
        "test_a_traceback_of_the_harness_alone_names_no_line"
    )
    assert innermost(raised.tb.tb_next) is None


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
