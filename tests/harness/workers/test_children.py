"""A process's children, from its own /proc entry (killpoint.workers.children)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import psutil

from killpoint.workers.children import children, descendants, held_children

SLEEPER = [sys.executable, "-c", "import sys; sys.stdin.read()"]
# Starts a sleeper of its own, says so on stdout, then waits for it.
PARENT = (
    "import subprocess, sys; child = subprocess.Popen(sys.argv[1:]); "
    "print(child.pid, flush=True); child.wait()"
)


def _sleeper() -> subprocess.Popen[bytes]:
    return subprocess.Popen(SLEEPER, stdin=subprocess.PIPE)


def _end(proc: subprocess.Popen[bytes]) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    proc.wait()


def test_lists_the_children_of_every_thread_and_only_those() -> None:
    main = _sleeper()
    started: list[subprocess.Popen[bytes]] = []
    forked, checked = threading.Event(), threading.Event()

    def fork_and_stay() -> None:  # the child's parent is this thread while it lives
        started.append(_sleeper())
        forked.set()
        checked.wait()

    thread = threading.Thread(target=fork_and_stay)
    thread.start()
    forked.wait()
    nested = subprocess.Popen(
        [sys.executable, "-c", PARENT, *SLEEPER], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert nested.stdout is not None
    grandchild = int(nested.stdout.readline())
    try:
        found = children(os.getpid())
        assert main.pid in found
        assert started[0].pid in found
        assert nested.pid in found
        assert grandchild not in found
        assert sorted(found) == sorted(p.pid for p in psutil.Process().children())
    finally:
        checked.set()
        thread.join()
        for proc in (main, *started, nested):
            _end(proc)
    assert not {main.pid, started[0].pid, nested.pid} & set(children(os.getpid()))


def test_a_process_that_is_gone_has_none() -> None:
    proc = _sleeper()
    _end(proc)
    assert children(proc.pid) == []


def test_without_the_kernels_lists_it_scans(tmp_path: Path) -> None:
    # A /proc whose threads keep no children file (CONFIG_PROC_CHILDREN off).
    (tmp_path / str(os.getpid()) / "task" / str(os.getpid())).mkdir(parents=True)
    proc = _sleeper()
    try:
        assert proc.pid in children(os.getpid(), proc=tmp_path)
    finally:
        _end(proc)


def test_descendants_are_every_process_below_parents_first() -> None:
    parent = subprocess.Popen(
        [sys.executable, "-c", PARENT, *SLEEPER], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    try:
        assert parent.stdout is not None
        grandchild = int(parent.stdout.readline())  # started once this line is read
        below = [p.pid for p in descendants(os.getpid())]
        assert below.index(parent.pid) < below.index(grandchild)
        assert [p.pid for p in held_children(parent.pid)] == [grandchild]
        assert [p.pid for p in descendants(parent.pid)] == [grandchild]
    finally:
        _end(parent)
    assert descendants(parent.pid) == []
