"""paused_lock: a stalled cell is charged to SQLite's lock only when a paused worker of the
cell holds one on the store, read from the kernel. pause_unlocked: a pause that lands
inside another thread's transaction is taken again once the lock is gone."""

# ruff: noqa: SIM300

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest

from killpoint.engine.stall import holds_lock, pause_unlocked, paused_lock
from killpoint.workers.processes import Worker, threads_stopped

pytestmark = pytest.mark.skipif(not Path("/proc/locks").exists(), reason="no /proc/locks")

# Holds a read transaction (SQLite's SHARED lock) on the file named in argv, says so on
# stdout, and waits for its stdin to close. With "lets-go", it ends the transaction after
# its first line of stdin and says "released".
HOLDER = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN IMMEDIATE" if sys.argv[2:] == ["wal-write"] else "BEGIN")
conn.execute("SELECT * FROM t").fetchall()
print("holding", flush=True)
if sys.argv[2:] == ["lets-go"]:
    sys.stdin.readline()
    conn.execute("COMMIT")
    print("released", flush=True)
sys.stdin.read()
"""


@dataclass
class Standin:
    """What paused_lock reads of a Worker: its pid, its role and whether it runs."""

    pid: int
    alive: bool = True
    spec: Any = field(default_factory=lambda: SimpleNamespace(log_name="worker"))


TABLE = "CREATE TABLE t (x)"
# An open connection to a WAL store, between transactions, as a worker held at its gate.
IDLE_WAL = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("SELECT * FROM t").fetchall()
print("holding", flush=True)
sys.stdin.read()
"""


def start_holder(
    tmp_path: Path, *args: str, wal: bool = False, script: str = HOLDER
) -> tuple[str, subprocess.Popen[str]]:
    path = tmp_path / "store.db"
    journal = "PRAGMA journal_mode=WAL" if wal else "PRAGMA journal_mode=DELETE"
    create = f"c = sqlite3.connect({str(path)!r}); c.execute({journal!r}); c.execute({TABLE!r})"
    subprocess.run([sys.executable, "-c", f"import sqlite3; {create}"], check=True)
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(path), *args],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and "holding" == proc.stdout.readline().strip()
    return f"sqlite:///{path}", proc


@pytest.fixture
def holder(tmp_path: Path) -> Iterator[tuple[str, subprocess.Popen[str]]]:
    url, proc = start_holder(tmp_path)
    yield url, proc
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


@dataclass
class Pausable:
    """What pause_unlocked does to a Worker: stop every thread, wake. With `let_go`, the
    first pause also writes the line after which the holder commits (read once woken):
    the other thread finishing its transaction once it runs again."""

    proc: subprocess.Popen[str]
    let_go: bool = False
    pauses: int = 0

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stop_all(self, deadline: float) -> bool:
        stop(self.proc)
        self.pauses += 1
        if self.let_go and self.pauses == 1:
            assert self.proc.stdin is not None
            self.proc.stdin.write("commit\n")
            self.proc.stdin.flush()
        return True

    def cont(self) -> None:
        os.kill(self.proc.pid, signal.SIGCONT)


def finish(proc: subprocess.Popen[str]) -> None:
    os.kill(proc.pid, signal.SIGCONT)
    proc.kill()
    proc.wait()


def test_a_pause_inside_another_threads_transaction_is_taken_again(tmp_path: Path) -> None:
    url, proc = start_holder(tmp_path, "lets-go")
    worker = Pausable(proc, let_go=True)
    try:
        retaken = pause_unlocked(url, cast("Worker", worker), 30.0, 1e18, threading.Event())
        assert (1, 2) == (retaken, worker.pauses)
        assert threads_stopped(proc.pid)
        assert not holds_lock(url, cast("Worker", worker))
    finally:
        finish(proc)


def test_a_lock_never_let_go_stays_for_the_finding(
    holder: tuple[str, subprocess.Popen[str]],
) -> None:
    url, proc = holder
    worker = Pausable(proc)
    retaken = pause_unlocked(url, cast("Worker", worker), 0.2, 1e18, threading.Event())
    assert retaken >= 1
    assert threads_stopped(proc.pid)
    assert holds_lock(url, cast("Worker", worker))
    workers = cast("list[Worker]", [Standin(proc.pid)])
    assert paused_lock(url, workers, "x") is not None


def test_a_worker_holding_no_lock_is_paused_once(tmp_path: Path) -> None:
    url, proc = start_holder(tmp_path, "lets-go")
    assert proc.stdin is not None
    proc.stdin.write("commit\n")
    proc.stdin.flush()
    worker = Pausable(proc)
    try:
        assert proc.stdout is not None and "released" == proc.stdout.readline().strip()
        assert 0 == pause_unlocked(url, cast("Worker", worker), 30.0, 1e18, threading.Event())
        assert 1 == worker.pauses
    finally:
        finish(proc)


def test_a_worker_with_a_wal_store_open_between_transactions_is_paused_once(
    tmp_path: Path,
) -> None:
    # Its connection keeps SHARED on the file, as every WAL connection does: no lock of a
    # writer, so nothing to wait for.
    url, proc = start_holder(tmp_path, wal=True, script=IDLE_WAL)
    worker = Pausable(proc)
    try:
        # A short settle time: were the SHARED lock taken for a writer's, the pause would
        # be retaken after it, and the test fail at once rather than after 30 s.
        assert 0 == pause_unlocked(url, cast("Worker", worker), 1.0, 1e18, threading.Event())
        assert 1 == worker.pauses
        assert paused_lock(url, cast("list[Worker]", [Standin(proc.pid)]), "x") is None
    finally:
        finish(proc)


def test_a_paused_wal_writer_is_named_by_the_wals_write_lock(tmp_path: Path) -> None:
    url, proc = start_holder(tmp_path, "wal-write", wal=True)
    try:
        stop(proc)
        found = paused_lock(url, cast("list[Worker]", [Standin(proc.pid)]), "x")
        assert found is not None
        assert "paused holding the store's SQLite lock (WAL write lock)" in found.sentence
    finally:
        finish(proc)
