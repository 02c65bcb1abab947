"""Calls into code killpoint does not control, made in the engine's process, have a
deadline: a hanging adapter call makes its cell `hung`, the campaign goes on, and a
signal still stops it."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from killpoint.engine.deadline import Caller
from killpoint.errors import Interrupted, Overdue
from tests.harness.misbehaving_adapters import FIFO_ENV

REPO = Path(__file__).resolve().parents[3]
HANGING = "tests.harness.misbehaving_adapters:HangingInspect"


def test_a_call_returns_its_value_or_raises_its_error() -> None:
    caller = Caller("t", threading.Event())
    assert 3 == caller.call("add", 5, lambda a, b: a + b, 1, 2)
    with pytest.raises(KeyError):
        caller.call("raise", 5, {}.__getitem__, "x")
    caller.close()


def test_a_call_that_hangs_is_overdue_and_the_next_one_runs() -> None:
    caller = Caller("t", threading.Event())
    never = threading.Event()
    t0 = time.monotonic()
    with pytest.raises(Overdue, match=r"the adapter's inspect\(\) did not return within"):
        caller.call("the adapter's inspect()", 0.2, never.wait)
    assert time.monotonic() - t0 < 5
    # The stuck thread is abandoned; the next call gets one of its own.
    assert "next" == caller.call("next", 5, str, "next")
    never.set()
    caller.close()


def test_a_stop_ends_the_wait_at_once() -> None:
    stop = threading.Event()
    caller = Caller("t", stop)
    never = threading.Event()
    threading.Timer(0.1, stop.set).start()
    with pytest.raises(Interrupted):
        caller.call("hang", 600, never.wait)
    never.set()


def matrix(tmp_path: Path, *extra: str) -> list[str]:
    return [
        sys.executable, "-m", "killpoint.cli.main", "matrix", "--runtime", HANGING,
        "--scenarios", "research", "--modes", "tool-batch", "--workers", "2",
        "--work-dir", str(tmp_path / "work"),
        "--json", str(tmp_path / "m.json"), "--report", str(tmp_path / "m.html"), *extra,
    ]  # fmt: skip


@pytest.mark.slow
def test_an_adapter_call_that_hangs_in_the_engine_makes_its_cell_hung(tmp_path: Path) -> None:
    """inspect() never returns: each cell is `hung` after --timeout, naming the call;
    the campaign ends with both reports and exit 1 (hung is unexpected)."""
    done = subprocess.run(
        matrix(tmp_path, "--points", "after-checkpoint:1,after-checkpoint:2", "--timeout", "3"),
        cwd=REPO, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert 1 == done.returncode, done.stderr
    assert "Traceback" not in done.stderr
    cells = json.loads((tmp_path / "m.json").read_text())["cells"]
    assert 2 == len(cells)
    for c in cells:
        assert "hung" == c["verdict"], c["detail"]
        assert "the adapter's inspect() did not return within the time limit (3.0 s)" in c["detail"]
    assert (tmp_path / "m.html").stat().st_size > 0


@pytest.mark.slow
def test_sigterm_stops_a_campaign_whose_adapter_call_hangs(tmp_path: Path) -> None:
    """A time limit far away and inspect() hanging: SIGTERM still ends the campaign at
    once, with exit 143 and the report written."""
    fifo = tmp_path / "calls"
    os.mkfifo(fifo)
    proc = subprocess.Popen(
        matrix(tmp_path, "--points", "after-checkpoint:1", "--timeout", "600"),
        cwd=REPO, env={**os.environ, FIFO_ENV: str(fifo)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        with open(fifo) as calls:  # blocks until inspect() has begun
            assert "inspect" == calls.readline().strip()
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert 143 == proc.returncode, err
    document = json.loads((tmp_path / "m.json").read_text())
    assert document["interrupted"] is True
