"""Where cells keep their stores: a StoreBackend per kind of store, each owning its URLs.

`backend_for(option)` turns the `--store` option into a backend: `sqlite` (a file in each
cell's folder) or a PostgreSQL URL (one schema per cell on that server). Everything that
needs to know what a store URL means (its kind, its schema, its file, its lock) asks the
backend, never the string.
"""

from __future__ import annotations

import re

from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError

from killpoint.errors import StoreError, StoreUnavailable
from killpoint.redaction import remember_url
from killpoint.stores.backend import StoreBackend
from killpoint.stores.urls import clean_authority, shown

# The kinds of store a cell id names (a pytest node id's STORE part).
STORE_KINDS = ("sqlite", "postgresql")
# The backend names (a URL's scheme before any `+driver`) of a PostgreSQL server.
POSTGRES_SCHEMES = ("postgresql", "postgres")


# The shapes a store option may take, for messages that cannot show the value given.
# (The password's shape is apart from the URL's: the output masking would hide it in one.)
EXPECTED = (
    "'sqlite' or 'postgresql+psycopg://USER@HOST:PORT/DB' (with a password: USER:PASSWORD@HOST)"
)
ENCODE_AT = "percent-encode an '@' in the user or password as %40"


def _unparsed(why: str) -> StoreError:
    """The refusal of a store option that does not parse. It never quotes the option: what
    does not parse cannot be told apart into password and the rest, so any part of it shown
    may be the password (and the masking of passwords relies on the same parse)."""
    return StoreError(
        f"killpoint: the store is not a URL killpoint can read ({why}); give {EXPECTED}"
    )


def _why_unparsed(option: str) -> str:
    """What is wrong with an option make_url refuses, told without quoting any of it."""
    scheme, sep, _ = option.partition("://")
    if not sep:
        return "it has no '://' after its scheme"
    if not re.fullmatch(r"[\w+]+", scheme):
        return "its scheme is not a driver name such as 'postgresql+psycopg'"
    return "its parts cannot be told apart"


def store_kind(option: str) -> str:
    """'sqlite' for the embedded store, 'postgresql' for a server URL; StoreError otherwise."""
    remember_url(option)  # before any message can name it
    if option == "sqlite":
        return "sqlite"
    try:
        url = make_url(option)
    except ArgumentError:
        raise _unparsed(_why_unparsed(option)) from None
    except ValueError:  # a port that is no number: an IPv6 host without its brackets, or an '@'
        # The exception quotes the "port", which may be part of the password: not shown.
        hints = ["its port is not a number", "write an IPv6 host in brackets, e.g. '[::1]:5432'"]
        if option.count("@") > 1:
            hints.append(ENCODE_AT)
        raise _unparsed("; ".join(hints)) from None
    backend = url.get_backend_name()
    if backend == "sqlite":
        raise StoreError(
            f"killpoint: store {shown(option)!r}: give 'sqlite' (each cell gets a file of its "
            "own), not a SQLite URL"
        )
    # `postgres` is libpq's own alias of `postgresql` (and what many providers hand out);
    # SQLAlchemy no longer knows it, but the backend connects with psycopg whatever the
    # scheme said (PostgresStores), so both are taken alike.
    if backend not in POSTGRES_SCHEMES:
        raise StoreError(
            f"killpoint: store {shown(option)!r} uses {backend!r}; give 'sqlite' or a "
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


# Until every caller asks for a backend by name.

__all__ = [
    "EXPECTED",
    "POSTGRES_SCHEMES",
    "STORE_KINDS",
    "StoreBackend",
    "StoreError",
    "StoreUnavailable",
    "backend_for",
    "clean_authority",
    "kind_of_url",
    "shown",
    "store_kind",
]
