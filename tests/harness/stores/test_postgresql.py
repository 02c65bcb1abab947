"""The PostgreSQL store backend's write lock, on a real server: it must hold whatever the
runtime writes, tables it has not created yet included."""

# ruff: noqa: SIM300
from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.exc import OperationalError

from killpoint.stores.postgresql import PostgresStores

pytestmark = pytest.mark.postgres
WAIT = 0.2  # seconds a writer waits for the held lock


@pytest.fixture
def stores(pg_url: str) -> PostgresStores:
    return PostgresStores(pg_url)


@pytest.fixture
def store(stores: PostgresStores, tmp_path: Path) -> Iterator[str]:
    url = stores.fresh(tmp_path)
    yield url
    stores.drop(url)


def write(url: str, statement: str) -> None:
    engine = create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(text(statement))
    finally:
        engine.dispose()


def test_tables_names_the_stores_tables(stores: PostgresStores, store: str) -> None:
    assert () == stores.tables(store)
    write(store, "CREATE TABLE runs (id int)")
    write(store, "CREATE TABLE sessions (id int)")
    assert ["runs", "sessions"] == sorted(stores.tables(store))


def test_a_held_lock_stops_writes_to_existing_tables(stores: PostgresStores, store: str) -> None:
    write(store, "CREATE TABLE runs (id int)")
    impatient = stores.with_lock_timeout(store, WAIT)
    release = stores.hold_write_lock(store)
    try:
        with pytest.raises(OperationalError, match="lock timeout"):
            write(impatient, "INSERT INTO runs VALUES (1)")
    finally:
        release()
    write(impatient, "INSERT INTO runs VALUES (1)")


def test_a_held_lock_stops_a_runtime_creating_its_tables(
    stores: PostgresStores, store: str
) -> None:
    """A runtime that creates its tables at its first write (agno does) meets the lock
    too: the tables it will create (as its baseline's store held them) are held by name.
    Once released, nothing of the hold is left and the runtime creates them."""
    impatient = stores.with_lock_timeout(store, WAIT)
    release = stores.hold_write_lock(store, ("runs",))
    try:
        with pytest.raises(OperationalError, match="lock timeout"):
            write(impatient, "CREATE TABLE IF NOT EXISTS runs (id int)")
    finally:
        release()
    assert () == stores.tables(store)
    write(impatient, "CREATE TABLE IF NOT EXISTS runs (id int)")
    assert ("runs",) == stores.tables(store)
