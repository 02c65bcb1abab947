"""Give the engine's free heap pages back to the system between cells.

Judging a cell reads the whole state of its run; the large-output scenario alone makes
transient strings of several MiB per cell. glibc keeps the pages such allocations
leave free (its mmap threshold rises after the first large free, and a small live chunk
pins the top of the heap), so without a trim the engine's RSS climbs through those cells
although what it holds stays flat (tests/benchmarks/engine_footprint.py prints both).
`malloc_trim(0)` returns free pages from every arena. Elsewhere than glibc it is absent
and this does nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import threading
import time
from collections.abc import Callable

INTERVAL = 1.0  # seconds between trims: a trim walks every arena (about a millisecond)


def _malloc_trim() -> Callable[[int], int] | None:
    name = ctypes.util.find_library("c")
    try:
        libc = ctypes.CDLL(name)
        trim = libc.malloc_trim
    except (OSError, AttributeError, TypeError):
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


_TRIM = _malloc_trim()


class HeapTrimmer:
    """Trims at most once per `interval` seconds, however often it is asked."""

    def __init__(self, interval: float = INTERVAL) -> None:
        self.interval = interval
        self.trims = 0
        self.seconds = 0.0  # spent trimming, for the benchmark
        self._last = time.monotonic()
        self._lock = threading.Lock()

    @property
    def available(self) -> bool:
        return _TRIM is not None

    def maybe_trim(self) -> None:
        if _TRIM is None:
            return
        with self._lock:
            now = time.monotonic()
            if now - self._last < self.interval:
                return
            _TRIM(0)
            self._last = time.monotonic()
            self.trims += 1
            self.seconds += self._last - now


__all__ = ["INTERVAL", "HeapTrimmer"]
