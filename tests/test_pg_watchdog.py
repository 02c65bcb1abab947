"""The tests' own PostgreSQL servers end with the process that started them, however it
ends: a SIGKILLed pytest session (or xdist worker) leaves no server behind."""

# ruff: noqa: SIM300
from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import psutil
import pytest

from tests.conftest import LocalPostgres, PgUnavailable

REPO = Path(__file__).resolve().parent.parent

STARTER = """
import sys, threading
from tests.conftest import LocalPostgres
local = LocalPostgres()
local.start()
print(local.postmaster_pid(), local.base, flush=True)
threading.Event().wait()
"""


@pytest.mark.postgres
@pytest.mark.slow
def test_a_server_outlives_no_sigkilled_session(tmp_path: Path) -> None:
    """SIGKILL the process that started a server: its watchdog stops the server and
    removes its folder."""
    try:
        LocalPostgres().stop()  # only to learn whether a server can be started here
    except PgUnavailable as exc:
        pytest.skip(f"PostgreSQL tests skipped: {exc}")
    proc = subprocess.Popen(
        [sys.executable, "-c", STARTER], cwd=REPO, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        pid_text, _, base = proc.stdout.readline().strip().partition(" ")
        postmaster = psutil.Process(int(pid_text))
        assert postmaster.is_running()
        watchdogs = [
            p for p in psutil.Process(proc.pid).children() if "pg_watchdog" in " ".join(p.cmdline())
        ]
        assert 1 == len(watchdogs)
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        _, alive = psutil.wait_procs([postmaster, *watchdogs], timeout=60)
        assert [] == alive
        assert not Path(base).exists()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        if "postmaster" in locals() and postmaster.is_running():
            os.kill(postmaster.pid, signal.SIGKILL)
