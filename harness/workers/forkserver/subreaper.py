"""Imported by the forkserver: every process a worker leaves behind stays its child.

A runtime's tool may start a child that calls setsid(), ignores SIGTERM, and outlives the
worker that started it; once that worker is gone, the kernel gives the orphan to the
nearest ancestor that asked for orphans (PR_SET_CHILD_SUBREAPER), else to init, where no
one would find it again. The forkserver asks: orphans of its workers become its own
children, where the engine sweeps them (killpoint.workers.processes.kill_left_behind) and
the forkserver's loop reaps them.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import warnings

PR_SET_CHILD_SUBREAPER = 36  # linux/prctl.h


def become_subreaper() -> bool:
    """True when the kernel took the request (Linux 3.4 and later)."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        return bool(libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0)
    except (OSError, AttributeError):
        return False


SUBREAPER = become_subreaper()
# The forkserver's loop reaps every child it has; an adopted orphan is not one it forked,
# which it would otherwise report on the campaign's stderr as "unexpected".
warnings.filterwarnings("ignore", message="forkserver: waitpid returned unexpected pid")
