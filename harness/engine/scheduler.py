"""Cells at work: a pool of threads, the jobs started on it, in an order, and the wait until
every job (and every job a job started from its own thread) has ended.

A campaign says what a job is (a row's baseline, its traced worker, a cell) and records
what each gives; the scheduler only starts them and waits. It has two seams: `order`
(which of the cells ready to start goes first: as planned unless told) and `stop` (a
condition asked each time jobs end; once it names a reason, the jobs not yet begun are
cancelled and no new one starts).

The pool has more threads than slots (killpoint.engine.slots): a cell that waits on the
clock lends its slot to a cell on another thread.
"""

from __future__ import annotations

import contextlib
import queue
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, Protocol, TypeVar

from killpoint.engine.slots import Slots
from killpoint.errors import Interrupted
from killpoint.values.cell import Cell

T = TypeVar("T")
NO_THREAD = "can't start new thread"


class CellOrder(Protocol):
    """Which cells start first: `cells` (ready to start, in the plan's order) reordered."""

    def __call__(self, cells: Sequence[Cell]) -> list[Cell]: ...


class StopCondition(Protocol):
    """Why to start no more cells (a budget spent, a first failure), or None to go on."""

    def __call__(self) -> str | None: ...


def as_planned(cells: Sequence[Cell]) -> list[Cell]:
    return list(cells)


def never() -> str | None:
    return None


class Scheduler:
    """One campaign's jobs on a pool of `slots.threads` threads."""

    def __init__(
        self, slots: Slots, *, order: CellOrder = as_planned, stop: StopCondition = never
    ) -> None:
        self.slots = slots
        self.order = order
        self.stop = stop
        self.stopped: str | None = None  # what `stop` said, once it said something
        self.pool = ThreadPoolExecutor(max_workers=slots.threads, thread_name_prefix="cell")
        self.futures: list[Future[Any]] = []  # every job submitted: an interrupt cancels them
        self._pending: set[Future[Any]] = set()  # what wait() waits for (its thread's alone)
        # Jobs started from another job's thread, merged into `_pending` by the waiting one.
        self._started: queue.SimpleQueue[Future[Any]] = queue.SimpleQueue()
        # Each job tells the waiting thread when it is done: waiting on the whole pending
        # set instead (concurrent.futures.wait) locks and unlocks every future in it at each
        # cell's end, which over a matrix's thousands of cells costs the engine seconds of
        # CPU, all of it holding the GIL its cells' threads need.
        self._finished: queue.SimpleQueue[Future[Any]] = queue.SimpleQueue()

    def at_once(self, fn: Callable[..., T], *args: Any) -> Future[T]:
        """`fn(*args)` in a slot, run here if no thread can be started (a baseline every
        cell of its row needs); the caller waits on the future."""
        future = submit(self.pool, self.slots.working(fn), *args, inline=True)
        self.futures.append(future)
        return future

    def start(self, fn: Callable[..., Any], *args: Any) -> Future[Any] | None:
        """`fn(*args)` on a thread of the pool, waited for by wait() (from any thread);
        None when no thread could be started for it, or the campaign stopped starting."""
        if self.stopped is not None:
            return None
        future = submit(self.pool, fn, *args)
        if future.cancelled():
            return None
        self.futures.append(future)
        self._started.put(future)
        return future

    def wait(self, *ticks: Callable[[], object]) -> None:
        """Until every job started has ended, each of `ticks` called between (progress, a
        heap trim)."""
        self._merge()
        while self._pending:
            for future in drain(self._finished, timeout=0.5):
                self._pending.discard(future)
                if not future.cancelled():  # a job stop() cancelled never began
                    with contextlib.suppress(Interrupted):
                        future.result()
            self._merge()
            if self.stopped is None:
                self.stopped = self.stop()
                if self.stopped is not None:
                    self.cancel()
            for tick in ticks:
                tick()

    def _merge(self) -> None:
        while True:
            try:
                future = self._started.get_nowait()
            except queue.Empty:
                return
            self._pending.add(future)
            future.add_done_callback(self._finished.put)  # at once if it is done already

    def cancel(self) -> None:
        """The jobs not yet begun never begin."""
        for future in self.futures:
            future.cancel()

    def wind_down(self, kill: Callable[[], object], give_up: Callable[[], bool]) -> bool:
        """After an interrupt: no queued job begins, and the running ones end as `kill`
        kills their workers; True when they all ended, False when `give_up` said to stop
        waiting (a second signal)."""
        self.cancel()
        running = [f for f in self.futures if not f.done()]
        while running and not give_up():
            _, undone = wait(running, timeout=0.05)
            running = list(undone)
            kill()
        return not running

    def shutdown(self, wait: bool) -> None:
        self.pool.shutdown(wait=wait, cancel_futures=True)


def drain(items: queue.SimpleQueue[T], timeout: float) -> list[T]:
    """What `items` holds, waiting up to `timeout` seconds for the first of it."""
    try:
        got = [items.get(timeout=timeout)]
    except queue.Empty:
        return []
    while True:
        try:
            got.append(items.get_nowait())
        except queue.Empty:
            return got


def submit(
    pool: ThreadPoolExecutor, fn: Callable[..., Any], *args: Any, inline: bool = False
) -> Future[Any]:
    """pool.submit, when the pool's next thread may not start (RuntimeError: can't start
    new thread, under `ulimit -v` or `-u`). The pool queues the work before it starts a
    thread, so a pool that has one runs it later; a pool with none returns it cancelled,
    or, `inline`, runs it here (a baseline every cell of its row needs)."""
    mine: Future[Any] = Future()

    def job() -> None:
        if mine.done() or mine.running() or not mine.set_running_or_notify_cancel():
            return  # cancelled, or run already by the caller
        try:
            mine.set_result(fn(*args))
        except BaseException as exc:
            mine.set_exception(exc)

    try:
        pool.submit(job)
    except RuntimeError as exc:
        if NO_THREAD not in str(exc):
            raise
        if getattr(pool, "_threads", None):
            return mine  # queued: a thread the pool has takes it
        if inline:
            job()
        else:
            mine.cancel()
    return mine


__all__ = [
    "NO_THREAD",
    "CellOrder",
    "Scheduler",
    "StopCondition",
    "as_planned",
    "drain",
    "never",
    "submit",
]
