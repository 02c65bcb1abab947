"""paused_lock: a stalled cell is charged to SQLite's lock only when a paused worker of the
cell holds one on the store, read from the kernel."""

# ruff: noqa: SIM300

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from killpoint.engine.stall import paused_lock
from killpoint.workers.processes import Worker, threads_stopped

pytestmark = pytest.mark.skipif(not Path("/proc/locks").exists(), reason="no /proc/locks")

# Holds a read transaction (SQLite's SHARED lock) on the file named in argv, says so on
# stdout, and waits for its stdin to close.
HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN")
conn.execute("SELECT * FROM t").fetchall()
print("holding", flush=True)
sys.stdin.read()
"""


@dataclass
class Standin:
    """What paused_lock reads of a Worker: its pid, its role and whether it runs."""

    pid: int
    alive: bool = True
    spec: Any = field(default_factory=lambda: SimpleNamespace(log_name="worker"))


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    path = tmp_path / "store.db"
    subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sqlite3; sqlite3.connect({str(path)!r}).execute('CREATE TABLE t (x)')",
        ],
        check=True,
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and "holding" == proc.stdout.readline().strip()
    yield f"sqlite:///{path}", proc
    os.kill(proc.pid, signal.SIGCONT)
    proc.kill()
    proc.wait()


def stop(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGSTOP)
    os.waitpid(proc.pid, os.WSTOPPED)
    assert threads_stopped(proc.pid)


def test_a_paused_worker_holding_the_lock_is_named(
    holder: tuple[str, subprocess.Popen[str]],
) -> None:
    url, proc = holder
    stop(proc)
    workers = cast(
        "list[Worker]",
        [Standin(proc.pid), Standin(os.getpid(), spec=SimpleNamespace(log_name="resumer"))],
    )

    found = paused_lock(url, workers, "the takeover passed its time limit")

    assert found is not None
    assert ("store-locked", "hung") == (found.kind, found.verdict)
    assert "the worker was paused holding the store's SQLite lock (SHARED)" in found.sentence
    assert found.sentence.endswith("the takeover passed its time limit")
    assert f"worker (pid {proc.pid} holds SHARED), paused" in found.evidence


def test_a_running_holder_or_another_store_is_not_a_stall(
    holder: tuple[str, subprocess.Popen[str]], tmp_path: Path
) -> None:
    url, proc = holder
    workers = cast("list[Worker]", [Standin(proc.pid)])
    assert paused_lock(url, workers, "x") is None  # it holds the lock, but it runs

    stop(proc)
    assert paused_lock(url, cast("list[Worker]", []), "x") is None  # not the cell's
    assert paused_lock(f"sqlite:///{tmp_path / 'other.db'}", workers, "x") is None
    assert paused_lock("postgresql+psycopg://u@h/db", workers, "x") is None
