"""A PostgreSQL server: every baseline and cell gets a schema of its own in one database.

A cell's URL selects its schema with libpq's `options=-csearch_path=SCHEMA`; `schema_url`
writes that and `schema_of` reads it back (adapters that qualify their tables ask here).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import SQLAlchemyError

from . import StoreError

PREFIX = "kp_"  # every schema killpoint makes, and the only ones it drops


def schema_url(url: URL, schema: str) -> str:
    """`url` with its connections' search_path set to `schema` (and nothing else)."""
    return url.update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(
        hide_password=False
    )


def schema_of(url: str) -> str | None:
    """The schema a store URL selects (None: the server's default)."""
    options = str(make_url(url).query.get("options", ""))
    for option in options.split():
        if option.startswith("-csearch_path="):
            return option.partition("=")[2].split(",")[0] or None
    return None


class PostgresStores:
    kind = "postgresql"

    def __init__(self, option: str) -> None:
        self.url = make_url(option).set(drivername="postgresql+psycopg")

    def shown(self) -> str:
        return self.url.render_as_string(hide_password=True)

    def check(self) -> None:
        engine = create_engine(self.url)
        try:
            with engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except SQLAlchemyError as exc:
            reason = str(exc.orig or exc).strip().splitlines()[0]
            raise StoreError(
                f"killpoint: cannot reach the store {self.shown()}: {reason}; start the server "
                "or fix --store"
            ) from None
        finally:
            engine.dispose()

    def fresh(self, work: Path) -> str:
        schema = f"{PREFIX}{uuid.uuid4().hex[:16]}"
        engine = create_engine(self.url)
        try:
            with engine.begin() as conn:
                conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        finally:
            engine.dispose()
        return schema_url(self.url, schema)

    def drop(self, url: str) -> None:
        schema = schema_of(url)
        if schema is None or not schema.startswith(PREFIX):
            return
        engine = create_engine(self.url)
        try:
            with engine.begin() as conn:
                conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        except SQLAlchemyError:
            pass  # a leftover schema costs disk, not correctness
        finally:
            engine.dispose()

    def with_lock_timeout(self, url: str, seconds: float) -> str:
        parsed = make_url(url)
        options = str(parsed.query.get("options", ""))
        options = f"{options} -clock_timeout={int(seconds * 1000)}".strip()
        return parsed.update_query_dict({"options": options}).render_as_string(hide_password=False)

    def hold_write_lock(self, url: str) -> Callable[[], None]:
        engine = create_engine(url)
        conn = engine.connect()
        conn.begin()
        tables = conn.execute(
            text("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
        ).scalars()
        for table in tables:
            conn.execute(text(f'LOCK TABLE "{table}" IN EXCLUSIVE MODE'))

        def release() -> None:
            conn.rollback()
            conn.close()
            engine.dispose()

        return release


__all__ = ["PREFIX", "PostgresStores", "schema_of", "schema_url"]
