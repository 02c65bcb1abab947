"""Cells at once, counted as cells at work: a cell takes a slot for as long as it works and
gives it back while it only waits for a wall-clock time to pass (a paused worker's lease
running out, a worker held past its lease). Those waits are about a quarter of the
default matrix's cell time and cost no CPU, so another cell works meanwhile; the number of
cells competing for the cores (`--workers`) is the same as without them.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from killpoint.errors import Interrupted

T = TypeVar("T")

# Threads per slot: one for the cell at work, two for cells asleep on the clock. Sleepers
# are few at a time (a wait is 0.3 to 1.5 s, in cells that last 0.5 to 2 s), so with two
# more threads per slot a lent slot nearly always finds a cell to take it.
THREADS_PER_SLOT = 3


class Slots:
    """`limit` slots (None: as many as are asked for: a cell run outside a campaign).
    One slot is never lent unless `lend` says so: `--workers 1` means one cell at a time,
    which is what keeps every other cell off a store server that a cell restarts."""

    def __init__(
        self,
        limit: int | None,
        stopping: threading.Event | None = None,
        *,
        lend: bool | None = None,
    ) -> None:
        self.limit = limit
        self.lend = lend if lend is not None else (limit or 0) > 1
        self._free = _Places(limit) if limit is not None else None
        self._stopping = stopping or threading.Event()
        self._mine = threading.local()

    @property
    def threads(self) -> int:
        """How many threads a pool needs to keep every slot at work."""
        return (self.limit or 1) * THREADS_PER_SLOT

    def holding(self) -> bool:
        return bool(getattr(self._mine, "held", False))

    def working(self, fn: Callable[..., T]) -> Callable[..., T]:
        """`fn` run in a slot of its own; once the campaign is stopping, not at all."""

        @functools.wraps(fn)
        def in_slot(*args: Any, **kwargs: Any) -> T:
            with self._held():
                if self._stopping.is_set():
                    raise Interrupted()  # it waited for a slot while the campaign stopped
                return fn(*args, **kwargs)

        return in_slot

    @contextlib.contextmanager
    def _held(self) -> Iterator[None]:
        if self._free is None or self.holding():
            yield
            return
        self._free.acquire()
        self._mine.held = True
        try:
            yield
        finally:
            self._mine.held = False
            self._free.release()

    def sleep_until(self, when: float) -> None:
        """Until time.time() reaches `when`, with this thread's slot given back meanwhile
        (and taken again before returning: what follows is work). A campaign that stops
        ends the wait at once: the cell's workers are being killed under it."""
        if time.time() >= when or self._stopping.is_set():
            return
        with self.lent():
            # Waiting on a wall-clock time (a lease the store holds), not on a process.
            while time.time() < when and not self._stopping.wait(when - time.time() + 0.001):
                pass

    @contextlib.contextmanager
    def lent(self) -> Iterator[None]:
        """This thread's slot given back for the block (a cell waiting, not working), and
        taken again before the block's caller goes on. Without lending: held throughout."""
        lent = self.lend and self._free is not None and self.holding()
        if lent:
            assert self._free is not None
            self._mine.held = False
            self._free.release()
        try:
            yield
        finally:
            if lent:
                assert self._free is not None
                # Before any cell not yet begun: a cell half done holds processes and a
                # folder, and ends sooner than one that starts.
                self._free.acquire(first=True)
                self._mine.held = True


class _Places:
    """A counting semaphore whose `first` takers go before the others waiting. Each free
    place wakes one waiter, not all: a pool's threads are many, and every one woken
    needs the engine's interpreter lock only to wait again."""

    def __init__(self, n: int) -> None:
        self._free = n
        lock = threading.Lock()
        self._for_first = threading.Condition(lock)
        self._for_rest = threading.Condition(lock)
        self._first = 0  # `first` takers waiting
        self.waiting = 0

    def acquire(self, first: bool = False) -> None:
        with self._for_first:
            self.waiting += 1
            try:
                if first:
                    self._first += 1
                    try:
                        while self._free == 0:
                            self._for_first.wait()
                    finally:
                        self._first -= 1
                else:
                    while self._free == 0 or self._first:
                        self._for_rest.wait()
            finally:
                self.waiting -= 1
            self._free -= 1
            if self._free and not self._first:
                self._for_rest.notify()  # a place a first taker was woken for is left

    def release(self) -> None:
        with self._for_first:
            self._free += 1
            (self._for_first if self._first else self._for_rest).notify()


__all__ = ["THREADS_PER_SLOT", "Slots"]
