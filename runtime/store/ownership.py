"""Who drives a run: an owner token, its process, and a lease."""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass

import psutil


@dataclass(frozen=True)
class Owner:
    token: str
    host: str
    pid: int
    started: float  # process create time: tells a reused pid from the original

    @classmethod
    def current(cls) -> Owner:
        pid = os.getpid()
        return cls(
            token=uuid.uuid4().hex,
            host=socket.gethostname(),
            pid=pid,
            started=psutil.Process(pid).create_time(),
        )


def holder_is_alive(host: str | None, pid: int | None, started: float | None) -> bool:
    """Whether the process that holds a lease may still write.

    On another host we cannot tell, so the lease decides. On this host a process
    that is gone, a zombie (killed, not yet reaped) or a reused pid holds nothing.
    A stopped process (SIGSTOP) is alive: it may wake and write, so only its
    lease's expiry frees the run.
    """
    if host != socket.gethostname() or pid is None:
        return True
    try:
        proc = psutil.Process(pid)
        if proc.status() == psutil.STATUS_ZOMBIE:
            return False
        return started is None or abs(proc.create_time() - started) < 0.01
    except psutil.NoSuchProcess:
        return False
