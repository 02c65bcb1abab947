"""Where cells keep their stores: a StoreBackend per kind of store, each owning its URLs.

`backend_for(option)` turns the `--store` option into a backend: `sqlite` (a file in each
cell's folder) or a PostgreSQL URL (one schema per cell on that server). Everything that
needs to know what a store URL means (its kind, its schema, its file, its lock) asks the
backend, never the string.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

STORE_KINDS = ("sqlite", "postgresql")


class StoreError(ValueError):
    """A store option that is malformed or cannot be reached."""


class StoreUnavailable(Exception):
    """The store server cannot be reached (stopped, restarting, refusing connections): a
    failure of killpoint's own dependency, not of the runtime under test."""


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
        """Remove a store made by `fresh` (best effort: a leftover costs space only)."""
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


def store_kind(option: str) -> str:
    """'sqlite' for the embedded store, 'postgresql' for a server URL; StoreError otherwise."""
    if option == "sqlite":
        return "sqlite"
    try:
        url = make_url(option)
    except ArgumentError:
        raise StoreError(
            f"killpoint: store {option!r} is neither 'sqlite' nor a database URL; give 'sqlite' "
            "or 'postgresql+psycopg://user@host:port/dbname'"
        ) from None
    backend = url.get_backend_name()
    if backend == "sqlite":
        raise StoreError(
            f"killpoint: store {option!r}: give 'sqlite' (each cell gets a file of its own), "
            "not a SQLite URL"
        )
    if backend != "postgresql":
        raise StoreError(
            f"killpoint: store {option!r} uses {backend!r}; give 'sqlite' or a "
            "'postgresql+psycopg://...' URL"
        )
    return "postgresql"


def backend_for(option: str) -> StoreBackend:
    """The backend for a `--store` option."""
    if store_kind(option) == "sqlite":
        from .sqlite import SqliteStores

        return SqliteStores()
    from .postgresql import PostgresStores

    return PostgresStores(option)


def kind_of_url(url: str) -> str:
    """The kind of a store URL a backend handed out (what an adapter is given)."""
    return "postgresql" if make_url(url).get_backend_name() == "postgresql" else "sqlite"


def shown(option: str) -> str:
    """A store option or URL without its password (as is when it cannot be parsed)."""
    if option == "sqlite":
        return option
    try:
        return make_url(option).render_as_string(hide_password=True)
    except Exception:
        return "<a store URL that cannot be parsed>"


# Until every caller asks for a backend by name.
Stores = backend_for

__all__ = [
    "STORE_KINDS",
    "StoreBackend",
    "StoreError",
    "StoreUnavailable",
    "Stores",
    "backend_for",
    "kind_of_url",
    "shown",
    "store_kind",
]
