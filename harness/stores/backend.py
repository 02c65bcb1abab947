"""What every kind of store answers for (the StoreBackend Protocol), and its errors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol


class StoreBackend(Protocol):
    """Hands out isolated stores of one kind, and answers for their URLs."""

    kind: str  # "sqlite" | "postgresql": part of cell ids

    def shown(self) -> str:
        """The store option as it may be printed: never a password."""
        ...

    def check(self) -> None:
        """Raise StoreError naming the fix when stores cannot be made (a server down)."""
        ...

    def fresh(self, work: Path) -> str:
        """A new, empty store for one baseline or cell; its URL."""
        ...

    def drop(self, url: str) -> None:
        """Remove a store made by `fresh`; StoreLeftover when it stays (named, with the
        statement that removes it, and retried at the campaign's end)."""
        ...

    def keep(self, url: str, work: Path) -> None:
        """A store made by `fresh` is kept with its cell's folder `work`: where it is not
        in that folder, say there where it is and how to remove it."""
        ...

    def with_lock_timeout(self, url: str, seconds: float) -> str:
        """The same store, for a writer that gives up waiting for a lock after `seconds`."""
        ...

    def tables(self, url: str) -> tuple[str, ...]:
        """The tables a store holds (a runtime's, once it has run): what a later hold of
        the write lock must cover where locks are per table."""
        ...

    def hold_write_lock(self, url: str, tables: Sequence[str] = ()) -> Callable[[], None]:
        """Take the store's write lock from another connection; returns the release.
        `tables`: the runtime's tables, held even where it has not created them yet."""
        ...
