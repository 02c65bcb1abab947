"""Waiting on a state another process is about to reach: the store, or the kernel's view
of a worker, checked with a short back-off (the worker is parked at a gate, so what is
waited for is about to hold or never will)."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


def poll(predicate: Callable[[], bool], timeout: float, stop: threading.Event) -> bool:
    """Whether `predicate` held within `timeout` seconds (False also once `stop` is set):
    checked, then again after a back-off that doubles from 0.5 ms to 20 ms."""
    end = time.monotonic() + timeout
    pause = 0.0005
    while True:
        if predicate():
            return True
        if time.monotonic() >= end or stop.is_set():
            return False
        stop.wait(pause)
        pause = min(pause * 2, 0.02)


__all__ = ["poll"]
