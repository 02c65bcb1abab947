"""A thread pool that runs the queued job with the smallest key first.

A campaign's jobs (baselines, rows' traces, cells) arrive as baselines finish, not all at
once, and the order they should run in (killpoint.engine.run_order) is not the order they
arrive in: a pool that runs its queue first in, first out would run a row's cells before
another row's more informative ones. Jobs of one key run in the order they came.

The surface is concurrent.futures.ThreadPoolExecutor's, as far as a campaign uses it:
`submit` queues the job before it starts a thread, so a pool that has a thread runs it
later when the next thread cannot start (RuntimeError: can't start new thread), and
`_threads` says whether it has one (killpoint.engine.scheduler.submit).
"""

from __future__ import annotations

import heapq
import itertools
import threading
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

Job = tuple[Any, int, "Future[Any]", Callable[..., Any], tuple[Any, ...]]


class PriorityPool:
    """Up to `max_workers` threads, each taking the queued job with the smallest key."""

    def __init__(self, max_workers: int, thread_name_prefix: str = "pool") -> None:
        self._max = max_workers
        self._prefix = thread_name_prefix
        self._queue: list[Job] = []
        self._arrivals = itertools.count()
        self._cond = threading.Condition()
        self._idle = 0
        self._shutdown = False
        self._threads: set[threading.Thread] = set()

    def submit(self, fn: Callable[..., Any], /, *args: Any, key: Any = 0) -> Future[Any]:
        future: Future[Any] = Future()
        with self._cond:
            if self._shutdown:
                raise RuntimeError("cannot schedule new futures after shutdown")
            heapq.heappush(self._queue, (key, next(self._arrivals), future, fn, args))
            if self._idle > 0:
                self._cond.notify()
                return future
            if len(self._threads) >= self._max:
                return future  # a busy thread takes it when it is done
            thread = threading.Thread(
                target=self._work, name=f"{self._prefix}_{len(self._threads)}", daemon=True
            )
            # Counted before it starts, taken back if it cannot: the job stays queued.
            self._threads.add(thread)
        try:
            thread.start()
        except RuntimeError:
            with self._cond:
                self._threads.discard(thread)
            raise
        return future

    def _work(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._shutdown:
                    self._idle += 1
                    self._cond.wait()
                    self._idle -= 1
                if not self._queue:
                    return  # shut down, and nothing left
                _, _, future, fn, args = heapq.heappop(self._queue)
            if future.set_running_or_notify_cancel():
                try:
                    future.set_result(fn(*args))
                except BaseException as exc:
                    future.set_exception(exc)
            del future, fn, args  # nothing of a finished job stays referenced here

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        """No more jobs; `cancel_futures`: the queued ones never run; `wait`: until the
        threads have ended."""
        with self._cond:
            self._shutdown = True
            if cancel_futures:
                for _, _, future, _, _ in self._queue:
                    future.cancel()
                self._queue.clear()
            self._cond.notify_all()
            threads = list(self._threads)
        if wait:
            for thread in threads:
                if thread is not threading.current_thread():
                    thread.join()


__all__ = ["PriorityPool"]
