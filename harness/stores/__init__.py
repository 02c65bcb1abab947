"""Where cells keep their stores: a StoreBackend per kind of store, each owning its URLs.

`backend_for(option)` turns the `--store` option into a backend: `sqlite` (a file in each
cell's folder) or a PostgreSQL URL (one schema per cell on that server). Everything that
needs to know what a store URL means (its kind, its schema, its file, its lock) asks the
backend, never the string.
"""

from __future__ import annotations

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from killpoint.errors import StoreError, StoreUnavailable
from killpoint.redaction import remember_url
from killpoint.stores.backend import StoreBackend

# The kinds of store a cell id names (a pytest node id's STORE part).
STORE_KINDS = ("sqlite", "postgresql")


def store_kind(option: str) -> str:
    """'sqlite' for the embedded store, 'postgresql' for a server URL; StoreError otherwise."""
    remember_url(option)  # before any message can name it
    if option == "sqlite":
        return "sqlite"
    try:
        url = make_url(option)
    except ArgumentError:
        raise StoreError(
            f"killpoint: store {option!r} is neither 'sqlite' nor a database URL; give 'sqlite' "
            "or 'postgresql+psycopg://user@host:port/dbname'"
        ) from None
    except ValueError as exc:  # a port that is no number: an IPv6 host without its brackets
        raise StoreError(
            f"killpoint: store {option!r} is not a valid URL ({exc}); write an IPv6 host in "
            "brackets, e.g. 'postgresql+psycopg://user@[::1]:5432/dbname'"
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
        from killpoint.stores.sqlite import SqliteStores

        return SqliteStores()
    from killpoint.stores.postgresql import PostgresStores

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

__all__ = [
    "STORE_KINDS",
    "StoreBackend",
    "StoreError",
    "StoreUnavailable",
    "backend_for",
    "kind_of_url",
    "shown",
    "store_kind",
]
