"""A PostgreSQL database per pytest-xdist worker: its name, and creating and dropping it on
a real server."""

# ruff: noqa: SIM300
from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from killpoint.plugin.worker_databases import create_database, drop_database, worker_database_name

if TYPE_CHECKING:
    from tests.conftest import PgServer


def test_the_name_joins_database_token_and_worker_in_lower_case() -> None:
    store = "postgresql+psycopg://ci:secret@db:5432/Shop-Tests"

    assert "shop_tests_ab12cd34_gw3" == worker_database_name(store, "ab12cd34", "gw3")


def test_a_url_without_a_database_names_it_killpoint() -> None:
    store = "postgresql+psycopg://ci@db:5432"

    assert "killpoint_ab12cd34_gw0" == worker_database_name(store, "ab12cd34", "gw0")


def test_a_long_name_keeps_its_unique_end_within_postgresqls_limit() -> None:
    store = f"postgresql+psycopg://ci@db/{'x' * 80}"

    name = worker_database_name(store, "ab12cd34", "gw12")

    assert 63 == len(name)
    assert name.endswith("x_ab12cd34_gw12")


def _databases(server: PgServer) -> set[str]:
    engine = create_engine(server.url_for("postgres"))
    try:
        with engine.connect() as conn:
            return set(conn.execute(text("SELECT datname FROM pg_database")).scalars())
    finally:
        engine.dispose()


@pytest.mark.postgres
def test_a_worker_database_is_created_usable_and_dropped(pg_server: PgServer) -> None:
    store = pg_server.url_for("postgres")
    name = worker_database_name(store, uuid.uuid4().hex[:8], "gw0")

    url = create_database(store, name)
    try:
        assert ("postgresql+psycopg", name) == (make_url(url).drivername, make_url(url).database)
        engine = create_engine(url)
        try:
            with engine.connect() as conn:
                assert name == conn.execute(text("SELECT current_database()")).scalar()
            assert name in _databases(pg_server)
            # The connection is back in the engine's pool, still open: the drop forces it.
            drop_database(store, name)
        finally:
            engine.dispose()
        assert name not in _databases(pg_server)
    finally:
        pg_server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.postgres
def test_creating_again_starts_empty_and_dropping_a_missing_one_is_quiet(
    pg_server: PgServer,
) -> None:
    store = pg_server.url_for("postgres")
    name = worker_database_name(store, uuid.uuid4().hex[:8], "gw1")
    try:
        engine = create_engine(create_database(store, name))
        try:
            with engine.begin() as conn:
                conn.execute(text("CREATE TABLE leftover (n int)"))
        finally:
            engine.dispose()

        engine = create_engine(create_database(store, name))  # a rerun of the same worker
        try:
            with engine.connect() as conn:
                tables = conn.execute(text("SELECT tablename FROM pg_tables")).scalars().all()
        finally:
            engine.dispose()
        assert "leftover" not in tables

        drop_database(store, name)
        drop_database(store, name)  # already gone: no error
        assert name not in _databases(pg_server)
    finally:
        pg_server.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
