"""One object per store URL in the engine process (an engine, a Store), reused by every
read of that store while its cell runs, and disposed when the cell is done with the store
(`release`): a campaign of thousands of cells must not hold the descriptors (and, in a RAM
folder, the memory) of store files it has already removed. Made lazily: never before a
fork."""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")

_caches: weakref.WeakSet[PerUrl[object]] = weakref.WeakSet()
_caches_lock = threading.Lock()


class PerUrl(Generic[T]):
    def __init__(
        self, make: Callable[[str], T], dispose: Callable[[T], object], kept: int = 64
    ) -> None:
        self._make = make
        self._dispose = dispose
        self._kept = kept  # a bound for a caller that never releases; cells release
        self._items: dict[str, T] = {}
        self._lock = threading.Lock()
        with _caches_lock:
            _caches.add(self)  # type: ignore[arg-type]

    def __call__(self, url: str) -> T:
        with self._lock:
            item = self._items.get(url)
            if item is None:
                item = self._items[url] = self._make(url)
                while len(self._items) > self._kept:
                    self._dispose(self._items.pop(next(iter(self._items))))
            return item

    def forget(self, url: str) -> None:
        with self._lock:
            item = self._items.pop(url, None)
        if item is not None:
            self._dispose(item)

    def __len__(self) -> int:
        return len(self._items)


def release(url: str) -> None:
    """Dispose what every cache holds for `url`: its connections close before the store's
    files are removed (or a PostgreSQL schema dropped, which waits for them)."""
    with _caches_lock:
        caches = list(_caches)
    for cache in caches:
        cache.forget(url)


__all__ = ["PerUrl", "release"]
