"""killpoint's own store server stopped and restarted under a campaign (a server this module
starts, not the session's), and its work folder filling up: the cells touched say so, the
campaign goes on, and what finished is written."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from tests.conftest import LocalPostgres

REPO = Path(__file__).resolve().parents[2]
TICKING = "tests.harness.scenarios_for_tests:TICKING"

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def read_ticks(fd: int, want: int, timeout: float) -> int:
    """Block on the FIFO until `want` ticks (tool calls in workers) have been read."""
    got = 0
    end = time.monotonic() + timeout
    while got < want:
        ready, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
        assert ready, f"only {got} of {want} ticks"
        try:
            got += len(os.read(fd, 4096))
        except BlockingIOError:
            continue
    return got


def campaign(tmp_path: Path, url: str, *extra: str) -> tuple[subprocess.Popen[str], int]:
    fifo = tmp_path / "ticks"
    os.mkfifo(fifo)
    fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    proc = subprocess.Popen(
        [sys.executable, "-m", "killpoint.cli", "matrix", "--scenarios", TICKING,
         "--modes", "tool", "--points", "all", "--store", url, "--workers", "2",
         "--timeout", "20", "--work-dir", str(tmp_path / "work"),
         "--json", str(tmp_path / "m.json"), "--report", str(tmp_path / "m.html"), *extra],
        cwd=REPO, env={**os.environ, "KILLPOINT_TEST_TICKS": str(fifo)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    return proc, fd


def test_a_server_stopped_and_restarted_mid_campaign(
    own_pg: tuple[LocalPostgres, str], tmp_path: Path
) -> None:
    """The server is stopped a few cells in and started again: the campaign finishes,
    the cells it touched are `unavailable` naming the store (not `ok`, not unexpected),
    the others are judged as usual; JSON and HTML are written, no cell folder and no
    process (forkserver included) is left."""
    local, url = own_pg
    proc, fd = campaign(tmp_path, url)
    try:
        family: list[psutil.Process] = []
        read_ticks(fd, 2 * 3 + 8, timeout=120)  # both baselines, then a few cells
        family = psutil.Process(proc.pid).children(recursive=True)
        local.halt()
        local.resume()
        _, err = proc.communicate(timeout=400)
    finally:
        os.close(fd)
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert 0 == proc.returncode, err
    assert "Traceback" not in err
    document = json.loads((tmp_path / "m.json").read_text())
    assert (tmp_path / "m.html").stat().st_size > 0
    cells = document["cells"]
    assert len(cells) == document["summary"]["planned"]
    touched = [c for c in cells if c["verdict"] == "unavailable"]
    assert touched, [c["verdict"] for c in cells]
    for c in touched:
        assert c["expected"] is True
        assert ["store-unavailable"] == [f["kind"] for f in c["findings"]]
        assert "the store server" in c["detail"], c["detail"]
    judged = [c for c in cells if c["verdict"] != "unavailable"]
    assert judged and all(c["expected"] for c in judged), [
        (c["id"], c["verdict"], c["detail"]) for c in judged
    ]
    assert "could not be judged" in err
    left = [p for p in (tmp_path / "work").glob("*/*")]
    assert [] == left
    _, alive = psutil.wait_procs(family, timeout=30)
    assert [] == [p.pid for p in alive]


def test_a_server_that_stays_down_costs_the_cells_and_nothing_else(
    own_pg: tuple[LocalPostgres, str], tmp_path: Path
) -> None:
    """Down for good after a few cells: every cell after that is `unavailable` without
    waiting out the whole campaign; the ones before are judged; exit 0 and both reports."""
    local, url = own_pg
    proc, fd = campaign(tmp_path, url, "--timeout", "3")
    try:
        read_ticks(fd, 2 * 3 + 4, timeout=120)
        local.halt()
        try:
            _, err = proc.communicate(timeout=400)
        finally:
            local.resume()
    finally:
        os.close(fd)
        if proc.poll() is None:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
    assert 0 == proc.returncode, err
    cells = json.loads((tmp_path / "m.json").read_text())["cells"]
    assert all(c["expected"] for c in cells), [(c["id"], c["detail"]) for c in cells]
    assert "unavailable" in {c["verdict"] for c in cells}
    assert (tmp_path / "m.html").exists()
