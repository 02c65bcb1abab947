"""Calls into code killpoint does not control, made in the engine's own process (an
adapter's `inspect()`, `read_session()`, `progress()`; a store server's answer), each
with a deadline.

Python cannot stop a thread, so the call runs on a daemon thread of the cell's own and
the cell waits for it until the deadline, or until the campaign stops: a call that hangs
costs its thread (abandoned; it exits if the call ever returns), never the cell's thread,
so the campaign goes on and a signal still ends it.
"""

from __future__ import annotations

import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from killpoint.errors import Interrupted, Overdue
from killpoint.values.durations import duration

T = TypeVar("T")
# How often a waiting cell looks at the campaign's stop event while a call runs.
STOP_CHECK = 0.05


class _Box:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None


Job = tuple[Callable[..., Any], tuple[Any, ...], _Box]


def _serve(jobs: queue.SimpleQueue[Job | None]) -> None:
    while True:
        job = jobs.get()
        if job is None:
            return
        fn, args, box = job
        try:
            box.value = fn(*args)
        except BaseException as exc:
            box.error = exc
        box.done.set()
        del job, fn, args, box  # nothing of a finished call stays referenced here


class Caller:
    """One cell's calls, made one at a time on a thread of its own, each with a deadline."""

    def __init__(self, name: str, stop: threading.Event) -> None:
        self.name = name
        self.stop = stop
        self._jobs: queue.SimpleQueue[Job | None] | None = None

    def call(self, what: str, seconds: float, fn: Callable[..., T], *args: Any) -> T:
        """`fn(*args)`, or Overdue after `seconds`, or Interrupted once the campaign stops."""
        if self.stop.is_set():
            raise Interrupted()
        if self._jobs is None:
            self._jobs = queue.SimpleQueue()
            threading.Thread(
                target=_serve, args=(self._jobs,), name=f"{self.name}-calls", daemon=True
            ).start()
        box = _Box()
        self._jobs.put((fn, args, box))
        end = time.monotonic() + seconds
        while not box.done.wait(min(STOP_CHECK, max(0.0, end - time.monotonic()))):
            if self.stop.is_set() or time.monotonic() >= end:
                self._abandon()
                if self.stop.is_set():
                    raise Interrupted()
                raise Overdue(what, seconds, duration(seconds))
        if box.error is not None:
            raise box.error
        value: T = box.value
        return value

    def _abandon(self) -> None:
        """The thread is stuck in a call: it exits if that call returns; the next call
        gets a thread of its own."""
        if self._jobs is not None:
            self._jobs.put(None)
            self._jobs = None

    def close(self) -> None:
        self._abandon()


__all__ = ["Caller", "Overdue"]
