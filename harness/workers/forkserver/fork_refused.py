"""Imported by the forkserver: a fork the kernel refuses costs one worker, not the forkserver.

multiprocessing's forkserver loop lets every OSError but ECONNABORTED out of its
`os.fork()`, and dies of it: under `ulimit -u` one EAGAIN (the user's processes and
threads at the limit for a moment) ended it. Every start after that spawned and warmed a
new one (seconds each, and another fork to be refused), the workers it had forked lost
their subreaper, and the start that met it read EOF where its pid should have been.

Here a refused fork closes the descriptors the loop received for that child, so the
parent reads EOF at once (killpoint.workers.processes turns it into NoProcess, and the
cell into `resource-exhausted`), then raises ECONNABORTED, which the loop takes as a
client gone and goes on. The descriptors are found in the loop's own frame
(`child_r`, `child_w`, `fds`: CPython 3.11 to 3.13); a loop that does not name them is
left to die as before, rather than to keep a request whose parent would wait forever.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from multiprocessing import forkserver

REFUSED = (errno.EAGAIN, errno.ENOMEM)
_fork = os.fork


def fork() -> int:
    try:
        return _fork()
    except OSError as exc:
        loop = sys._getframe(1)
        if exc.errno not in REFUSED or loop.f_code is not forkserver.main.__code__:
            raise
        names = loop.f_locals
        if not {"child_r", "child_w", "fds"} <= names.keys():
            raise
        for fd in (names["child_r"], names["child_w"], *names["fds"]):
            with contextlib.suppress(OSError, TypeError):
                os.close(fd)
        raise ConnectionAbortedError(errno.ECONNABORTED, f"fork refused: {exc}") from exc


os.fork = fork
