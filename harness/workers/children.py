"""A process's children and descendants, read from its own /proc entries.

psutil's `Process.children()` reads the stat file of every process on the machine to find
those whose parent is the one asked about; the engine asks about its forkserver after
every cell, and about each worker it kills, so on a busy machine that scan is
milliseconds a cell. Linux lists a thread's
children in `/proc/PID/task/TID/children` (a kernel built with CONFIG_PROC_CHILDREN, as
Debian's and most are); a child's parent is the thread that forked it, or any live thread
of a subreaper that adopted it, so every thread's list is read.
"""

from __future__ import annotations

import os
from pathlib import Path

import psutil

PROC = Path("/proc")


def children(pid: int, proc: Path = PROC) -> list[int]:
    """The pids whose parent is `pid` now; [] once `pid` is gone. Falls back to psutil's
    scan where the kernel keeps no children lists."""
    tasks = proc / str(pid) / "task"
    try:
        tids = os.listdir(tasks)
    except FileNotFoundError:
        return []
    found: list[int] = []
    for tid in tids:
        try:
            text = (tasks / tid / "children").read_text()
        except ProcessLookupError:
            continue  # a thread that ended meanwhile
        except FileNotFoundError:
            if not (tasks / tid).exists():
                continue  # a thread that ended meanwhile
            return _scanned(pid)  # no such list on this kernel
        found += (int(child) for child in text.split())
    return found


def held_children(pid: int, proc: Path = PROC) -> list[psutil.Process]:
    """children(), each held as a `psutil.Process` (which then signals only that process)
    and kept only if its parent is still `pid`: a child that ended since the list was read
    may have lent its pid to another process."""
    held: list[psutil.Process] = []
    for child in children(pid, proc):
        try:
            candidate = psutil.Process(child)
            if candidate.ppid() == pid:
                held.append(candidate)
        except psutil.Error:
            continue
    return held


def descendants(pid: int, proc: Path = PROC) -> list[psutil.Process]:
    """Every process below `pid` (held as held_children() holds them), parents first."""
    found: list[psutil.Process] = []
    parents = [pid]
    while parents:
        below = held_children(parents.pop(), proc)
        found += below
        parents += (p.pid for p in below)
    return found


def _scanned(pid: int) -> list[int]:
    try:
        return [p.pid for p in psutil.Process(pid).children()]
    except psutil.Error:
        return []
