"""What the kernel refused killpoint (a thread, a process), and the limit that explains it.

Under `ulimit -u` (RLIMIT_NPROC counts every process and thread of one user) a thread or
a fork fails with EAGAIN wherever it is asked for: in the engine, in the forkserver, in a
worker, in a tool the runtime runs. Measured on a campaign run as an unprivileged user
with `ulimit -u 22`: 7 cells `error` (EOFError: the forkserver died of its own refused
fork), 5 `unresumable` and 18 `missed` (a worker's "can't start new thread"), and one row
called nondeterministic, because a tool that could not start its thread made the
runtime record a tool error in one baseline and not in the other. None of it says
anything of the runtime.

So a worker records every thread or process it is refused, whoever asked for it, in a
file of its cell's folder (`record_refusals`); the engine reads it when it settles the
cell (`refusals`), and `exhausted` turns what a cell saw into one sentence naming the
limit and its fix, for a `resource-exhausted` finding (killpoint.stores.outage).
"""

from __future__ import annotations

import contextlib
import os
import resource
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from killpoint.errors import NO_PROCESS, NoProcess

REFUSALS = "refused.log"  # in a cell's folder: one line per refusal a worker met
NO_THREAD = "can't start new thread"  # CPython's RuntimeError, in every process
MARKERS = (NO_THREAD, NO_PROCESS)
READ_LIMIT = 4096  # of the refusals file: the first lines say what was refused
CAP_SYS_ADMIN = 21  # linux/capability.h
CAP_SYS_RESOURCE = 24


def record_refusals(work: Path) -> None:
    """In a worker: every thread start and fork the kernel refuses is noted in
    `work/REFUSALS` before the error goes on to whoever asked (the runtime, a tool)."""
    path = work / REFUSALS

    def note(what: str, exc: BaseException) -> None:
        line = f"worker pid {os.getpid()} {what}: {type(exc).__name__}: {exc}\n"
        # A refusal's note must not become an error of its own (a full disk says so itself).
        with contextlib.suppress(OSError):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
            try:
                os.write(fd, line.encode())
            finally:
                os.close(fd)

    start = threading.Thread.start

    def thread_start(self: threading.Thread) -> None:
        try:
            start(self)
        except RuntimeError as exc:
            if NO_THREAD in str(exc):
                note(f"could not start a thread ({self.name})", exc)
            raise

    threading.Thread.start = thread_start  # type: ignore[method-assign]
    os.fork = _noting(os.fork, note)
    # What subprocess forks with (CPython binds it at import).
    fork_exec = getattr(subprocess, "_fork_exec", None)
    if fork_exec is not None:
        subprocess._fork_exec = _noting(fork_exec, note)  # type: ignore[attr-defined]


def _noting(fn: Callable[..., Any], note: Callable[[str, BaseException], None]) -> Any:
    def call(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (BlockingIOError, MemoryError) as exc:  # EAGAIN, ENOMEM
            note(NO_PROCESS, exc)
            raise

    return call


def refusals(work: Path | None) -> str:
    """What the workers of a cell's folder were refused, as text `exhausted` reads."""
    if work is None:
        return ""
    try:
        with open(work / REFUSALS, "rb") as f:
            return f.read(READ_LIMIT).decode("utf-8", "replace")
    except OSError:
        return ""


def exhausted(seen: str) -> str | None:
    """Why a cell that saw `seen` (its workers' errors and logs, its findings) could not
    get a thread or a process, naming the limit and its fix; None if it saw no refusal."""
    if not any(marker in seen for marker in MARKERS):
        return None
    what = "a thread" if NO_THREAD in seen else "a process"
    if NO_PROCESS in seen and NO_THREAD in seen:
        what = "a thread or a process"
    return f"killpoint could not start {what} for this cell: {limit_named()}"


def limit_named() -> str:
    """The limits in force that explain an EAGAIN from a thread or a fork, each with
    its fix."""
    named = []
    nproc = resource.getrlimit(resource.RLIMIT_NPROC)[0]
    if nproc != resource.RLIM_INFINITY and nproc_enforced():
        named.append(
            f"the limit on processes and threads of user {os.getuid()} is {nproc} "
            f"(RLIMIT_NPROC, `ulimit -u`; every thread of every process counts): raise it "
            f"(`ulimit -u {max(4 * nproc, 4096)}`) or run fewer cells at once (`--workers 1`)"
        )
    space = resource.getrlimit(resource.RLIMIT_AS)[0]
    if space != resource.RLIM_INFINITY:
        named.append(
            f"the address-space limit is {space // 1024} KiB (RLIMIT_AS, `ulimit -v`; each "
            f"thread's stack counts): raise it (`ulimit -v {4 * (space // 1024)}` or "
            "`ulimit -v unlimited`)"
        )
    if not named:
        named.append(
            "no limit of this process explains it, so the machine is out of threads, "
            "processes or memory (kernel.threads-max, kernel.pid_max, a cgroup's pids.max)"
        )
    return "; ".join(named)


def nproc_enforced() -> bool:
    """The kernel holds this process to RLIMIT_NPROC: never for root's real uid, nor
    for a process with CAP_SYS_RESOURCE or CAP_SYS_ADMIN."""
    if os.getuid() == 0:
        return False
    effective = 0
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                effective = int(line.split()[1], 16)
    return not effective & (1 << CAP_SYS_RESOURCE | 1 << CAP_SYS_ADMIN)


__all__ = [
    "NO_PROCESS",
    "NO_THREAD",
    "REFUSALS",
    "NoProcess",
    "exhausted",
    "limit_named",
    "nproc_enforced",
    "record_refusals",
    "refusals",
]
