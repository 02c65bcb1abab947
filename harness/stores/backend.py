"""What every kind of store answers for (the StoreBackend Protocol), and its errors."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from killpoint.errors import KillpointError


class StoreError(KillpointError, ValueError):
    """A store option that is malformed or cannot be reached."""


class StoreUnavailable(KillpointError):
    """The store server cannot be reached (stopped, restarting, refusing connections): a
    failure of killpoint's own dependency, not of the runtime under test."""


class StoreLeftover(KillpointError):
    """A store that could not be removed (the server gone, a kill -9 of its postmaster):
    it stays on the server until the statement that drops it is run."""

    def __init__(self, store: str, where: str, statement: str, reason: str) -> None:
        super().__init__(f"could not drop {store} on {where} ({reason}); drop it with: {statement}")
        self.store = store
        self.where = where
        self.statement = statement
        self.reason = reason

    def to_json(self) -> dict[str, str]:
        return {
            "store": self.store,
            "server": self.where,
            "statement": self.statement,
            "error": self.reason,
        }


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
