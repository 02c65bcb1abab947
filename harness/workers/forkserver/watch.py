"""Imported by the forkserver: it does not outlive the process it serves.

multiprocessing's forkserver exits when the pipe from its parent reaches end of file, which
is late or never when a copy of that pipe's end lives on elsewhere; and a worker that the
campaign had paused (SIGSTOP) cannot notice that its engine is gone. So a thread of the
forkserver waits for its parent to end (a pidfd, where the kernel has them), then kills
every process it forked, paused ones included, and exits. Forked workers do not inherit
the thread; they watch their engine over their own pipe, and ask the kernel to kill them
when the forkserver dies (die_with_forkserver): a forkserver killed with its engine (a
SIGKILL to their process group) runs no watch, and a paused worker in a session of its
own would be left stopped for good.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import select
import signal
import threading
import time
from collections.abc import Callable

import psutil

PR_SET_PDEATHSIG = 1  # linux/prctl.h
FORKSERVER = os.getpid()  # read by its workers, which inherit this module loaded


def _prctl() -> Callable[..., int] | None:
    # Found once here, not in each worker: dlopen(NULL) runs no ldconfig, as find_library does.
    try:
        return ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None


_PRCTL = _prctl()


def die_with_forkserver() -> None:
    """Called first in a worker: SIGKILL it when the forkserver ends, stopped or not."""
    if _PRCTL is not None:
        _PRCTL(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != FORKSERVER:
        os._exit(1)  # it ended before the request took: nobody is left to be its parent


def wait_for(parent: int) -> None:
    """Return when process `parent` has ended."""
    try:
        fd = os.pidfd_open(parent)
    except (AttributeError, OSError):
        # No pidfd: we are its child, so it is gone when we are given another parent.
        while os.getppid() == parent:
            time.sleep(0.5)
        return
    try:
        select.select([fd], [], [])
    finally:
        os.close(fd)


def orphaned(parent: int) -> None:
    wait_for(parent)
    with contextlib.suppress(psutil.Error):
        for child in psutil.Process().children(recursive=True):
            with contextlib.suppress(psutil.Error, OSError):
                os.kill(child.pid, signal.SIGKILL)
    os._exit(0)


def watch() -> bool:
    """True when the watch runs. Under `ulimit -u` its thread may be refused: the
    forkserver goes on without it (a forkserver that died here would leave the campaign
    no worker at all), ending as multiprocessing's own does, when the last copy of its
    parent's pipe closes."""
    try:
        threading.Thread(
            target=orphaned, args=(os.getppid(),), name="killpoint-parent-watch", daemon=True
        ).start()
    except RuntimeError:
        return False
    return True


WATCHING = watch()
