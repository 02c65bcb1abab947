"""A process's children, from its own /proc entry (killpoint.workers.children)."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import psutil

from killpoint.workers.children import children

SLEEPER = [sys.executable, "-c", "import sys; sys.stdin.read()"]


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
        [sys.executable, "-c", "import subprocess, sys; subprocess.run(sys.argv[1:])", *SLEEPER],
        stdin=subprocess.PIPE,
    )
    try:
        found = children(os.getpid())
        assert main.pid in found
        assert started[0].pid in found
        assert nested.pid in found
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
