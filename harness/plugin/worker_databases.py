"""PostgreSQL under pytest-xdist: a database of its own for each worker.

A worker creates `<database>_<token>_<worker>` on the store's server when it first needs a
store, and drops it when it finishes; the controller drops those of workers that died. The
session's random token keeps concurrent sessions on a shared server apart. Inside that
database each cell still gets a schema of its own (killpoint.stores).

Apart from killpoint.stores because the plugin imports this module when pytest loads it:
SQLAlchemy is imported only when a database is made or dropped.
"""

from __future__ import annotations

import re
from typing import Any


def worker_database_name(store: str, token: str, worker: str) -> str:
    from sqlalchemy.engine import make_url

    base = make_url(store).database or "killpoint"
    name = re.sub(r"[^a-z0-9_]", "_", f"{base}_{token}_{worker}".lower())
    return name[-63:]  # PostgreSQL's identifier limit; the unique end is kept


def _admin_engine(store: str) -> Any:
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url

    url = make_url(store).set(drivername="postgresql+psycopg")
    return create_engine(url, isolation_level="AUTOCOMMIT")


def create_database(store: str, name: str) -> str:
    """CREATE DATABASE `name` on the store's server; returns its URL."""
    from sqlalchemy import text
    from sqlalchemy.engine import make_url

    engine = _admin_engine(store)
    try:
        with engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        engine.dispose()
    url = make_url(store).set(drivername="postgresql+psycopg", database=name)
    return url.render_as_string(hide_password=False)


def drop_database(store: str, name: str) -> None:
    from sqlalchemy import text
    from sqlalchemy.exc import SQLAlchemyError

    engine = _admin_engine(store)
    try:
        with engine.connect() as conn:
            # FORCE: this process's own cached Stores may still hold pooled connections.
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    except SQLAlchemyError:
        pass  # a leftover database costs disk, not correctness
    finally:
        engine.dispose()


__all__ = ["create_database", "drop_database", "worker_database_name"]
