"""One object per store URL in the engine process (an engine, a Store), reused by every
read of that store, the oldest disposed so that a long campaign does not hoard
connections. Made lazily: never before a fork."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class PerUrl(Generic[T]):
    def __init__(
        self, make: Callable[[str], T], dispose: Callable[[T], object], kept: int = 64
    ) -> None:
        self._make = make
        self._dispose = dispose
        self._kept = kept  # cells in flight at once stay well under this
        self._items: dict[str, T] = {}
        self._lock = threading.Lock()

    def __call__(self, url: str) -> T:
        with self._lock:
            item = self._items.get(url)
            if item is None:
                item = self._items[url] = self._make(url)
                while len(self._items) > self._kept:
                    self._dispose(self._items.pop(next(iter(self._items))))
            return item


__all__ = ["PerUrl"]
