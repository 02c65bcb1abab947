"""Imported by the forkserver: it does not outlive the process it serves.

multiprocessing's forkserver exits when the pipe from its parent reaches end of file, which
is late or never when a copy of that pipe's end lives on elsewhere; and a worker that the
campaign had paused (SIGSTOP) cannot notice that its engine is gone. So a thread of the
forkserver waits for its parent to end (a pidfd, where the kernel has them), then kills
every process it forked, paused ones included, and exits. Forked workers do not inherit
the thread; they watch their engine over their own pipe.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import threading
import time

import psutil


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
