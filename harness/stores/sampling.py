"""The work folder's free space and the store server's answers, sampled while cells run.

A cell's start and end say little about what happened in between: a neighbour fills the
disk and frees it again, a server stops answering for twenty seconds and comes back with
the same start time. So two threads of the engine keep looking, and each cell asks them
afterwards whether its dependencies failed while it ran (killpoint.stores.outage.Watch).
"""

from __future__ import annotations

import shutil
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from killpoint.errors import StoreUnavailable

if TYPE_CHECKING:
    from killpoint.stores.backend import StoreBackend

DISK_EVERY = 0.025  # seconds between two looks at the free space (one statvfs)
STORE_EVERY = 0.5  # seconds between two probes of the server (one new connection)
KEPT = 512  # spans of trouble remembered, per dependency
# Free bytes below which the work folder counts as full: SQLite needs room for a page and
# its journal, a log line for a block.
FULL_BELOW = 256 * 1024


def free_space(folder: Path) -> int:
    try:
        return shutil.disk_usage(folder).free
    except OSError:
        return FULL_BELOW  # a folder that cannot be asked: not evidence of a full disk


class Spans:
    """Moments of trouble, as (from, to, what) spans, consecutive ones merged."""

    def __init__(self) -> None:
        self._spans: list[list[Any]] = []
        self._lock = threading.Lock()

    def mark(self, start: float, end: float, what: Any) -> None:
        with self._lock:
            last = self._spans[-1] if self._spans else None
            if last is not None and start <= last[1]:
                last[1] = max(last[1], end)
                last[2] = what if isinstance(what, str) else min(last[2], what)
                return
            self._spans.append([start, end, what])
            del self._spans[:-KEPT]

    def during(self, since: float, until: float) -> Any:
        """What the last span that overlaps [since, until] recorded, or None."""
        with self._lock:
            for start, end, what in reversed(self._spans):
                if start <= until and end >= since:
                    return what
        return None


class Sampler:
    """Samples `work_root`'s free space, and the server behind `stores` if it has one."""

    def __init__(self, stores: StoreBackend, work_root: Path, full_below: int) -> None:
        self.stores = stores
        self.work_root = work_root
        self.full_below = full_below
        self.low = Spans()  # the free space (bytes) when it was below full_below
        self.down = Spans()  # why the server did not answer
        self._closed = threading.Event()
        self._started = False
        self._lock = threading.Lock()

    def start(self) -> None:
        with self._lock:
            if self._started:
                return
            self._started = True
        threading.Thread(target=self._disk, name="killpoint-disk", daemon=True).start()
        if hasattr(self.stores, "life"):
            threading.Thread(target=self._server, name="killpoint-server", daemon=True).start()

    def close(self) -> None:
        self._closed.set()

    def _disk(self) -> None:
        last = time.monotonic()
        while not self._closed.wait(DISK_EVERY):
            free = free_space(self.work_root)
            now = time.monotonic()
            if free < self.full_below:
                # Low since the last look, for all this thread knows.
                self.low.mark(last, now, free)
            last = now

    def _server(self) -> None:
        while not self._closed.wait(STORE_EVERY):
            start = time.monotonic()
            try:
                self.stores.life()  # type: ignore[attr-defined]
            except StoreUnavailable as exc:
                self.down.mark(start, time.monotonic(), str(exc))
            except Exception as exc:  # a probe must never end the sampling
                self.down.mark(start, time.monotonic(), f"{type(exc).__name__}: {exc}")


__all__ = ["DISK_EVERY", "FULL_BELOW", "STORE_EVERY", "Sampler", "Spans", "free_space"]
