"""Fresh stores for baselines and cells: a SQLite file each, or a PostgreSQL schema each."""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, SQLAlchemyError

STORE_KINDS = ("sqlite", "postgresql")


class StoreError(ValueError):
    """A store option that is malformed or cannot be reached."""


def store_kind(store: str) -> str:
    """'sqlite' for the embedded store, 'postgresql' for a server URL."""
    if store == "sqlite":
        return "sqlite"
    try:
        url = make_url(store)
    except ArgumentError:
        raise StoreError(
            f"killpoint: store {store!r} is neither 'sqlite' nor a database URL; give 'sqlite' "
            "or 'postgresql+psycopg://user@host:port/dbname'"
        ) from None
    if url.get_backend_name() != "postgresql":
        raise StoreError(
            f"killpoint: store {store!r} uses {url.get_backend_name()!r}; give 'sqlite' or a "
            "'postgresql+psycopg://...' URL"
        )
    return "postgresql"


class Stores:
    """Hands out isolated stores. PostgreSQL cells share one database, one schema each."""

    def __init__(self, store: str) -> None:
        self.kind = store_kind(store)
        self.base = store
        self._pg_url = None
        if self.kind == "postgresql":
            self._pg_url = make_url(store).set(drivername="postgresql+psycopg")

    def check(self) -> None:
        """Fail early, with the URL and the reason, when the server cannot be reached."""
        if self._pg_url is None:
            return
        engine = create_engine(self._pg_url)
        try:
            with engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except SQLAlchemyError as exc:
            shown = self._pg_url.render_as_string(hide_password=True)
            reason = str(exc.orig or exc).strip().splitlines()[0]
            raise StoreError(
                f"killpoint: cannot reach the store {shown}: {reason}; start the server "
                "or fix --store"
            ) from None
        finally:
            engine.dispose()

    def fresh(self, work_dir: Path) -> str:
        if self._pg_url is None:
            return f"sqlite:///{work_dir / 'store.db'}"
        schema = f"kp_{uuid.uuid4().hex[:16]}"
        engine = create_engine(self._pg_url)
        try:
            with engine.begin() as conn:
                conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        finally:
            engine.dispose()
        url = self._pg_url.update_query_dict({"options": f"-csearch_path={schema}"})
        return url.render_as_string(hide_password=False)

    def with_lock_timeout(self, url: str, seconds: float) -> str:
        """The same store, for a writer that gives up waiting for a lock after `seconds`."""
        parsed = make_url(url)
        if self._pg_url is None:
            return parsed.update_query_dict({"timeout": str(seconds)}).render_as_string(
                hide_password=False
            )
        options = parsed.query.get("options", "")
        options = f"{options} -clock_timeout={int(seconds * 1000)}".strip()
        return parsed.update_query_dict({"options": options}).render_as_string(hide_password=False)

    def hold_write_lock(self, url: str) -> Callable[[], None]:
        """Take the store's write lock from another connection; returns the release."""
        if self._pg_url is None:
            conn = sqlite3.connect(make_url(url).database or "", isolation_level=None)
            conn.execute("BEGIN IMMEDIATE")

            def release_sqlite() -> None:
                conn.execute("ROLLBACK")
                conn.close()

            return release_sqlite
        engine = create_engine(url)
        pg = engine.connect()
        pg.begin()
        tables = pg.execute(
            text("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        ).scalars()
        for table in tables:
            pg.execute(text(f'LOCK TABLE "{table}" IN EXCLUSIVE MODE'))

        def release_pg() -> None:
            pg.rollback()
            pg.close()
            engine.dispose()

        return release_pg

    def drop(self, url: str) -> None:
        if self._pg_url is None:
            return
        options = make_url(url).query.get("options", "")
        schema = str(options).partition("search_path=")[2]
        if not schema.startswith("kp_"):
            return
        engine = create_engine(self._pg_url)
        try:
            with engine.begin() as conn:
                conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        except SQLAlchemyError:
            pass  # a leftover schema costs disk, not correctness
        finally:
            engine.dispose()


__all__ = ["STORE_KINDS", "StoreError", "Stores", "store_kind"]
