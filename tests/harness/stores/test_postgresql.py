"""The PostgreSQL store backend's write lock, on a real server: it must hold whatever the
runtime writes, tables it has not created yet included."""

# ruff: noqa: SIM300
from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import OperationalError

from killpoint import kinds
from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig
from killpoint.errors import StoreError
from killpoint.stores.postgresql import (
    FIX_SERVER,
    FIX_USER,
    KEPT_NOTE,
    PREFIX,
    PostgresStores,
    connect_fix,
    schema_of,
    schema_url,
)
from tests.helpers import REPO_ROOT

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


def schemas(pg_url: str) -> set[str]:
    engine = create_engine(pg_url)
    try:
        with engine.connect() as conn:
            rows = conn.execute(text("SELECT nspname FROM pg_namespace")).scalars()
            return {r for r in rows if r.startswith(PREFIX)}
    finally:
        engine.dispose()


@pytest.mark.slow
@pytest.mark.parametrize("keep", ["all", "none"])
def test_a_kept_cells_schema_stays_and_its_folder_names_it(
    pg_url: str, tmp_path: Path, keep: str
) -> None:
    """A kept cell's folder says `store, ledger, worker logs`: on PostgreSQL its store is a
    schema, so the schema stays on the server and the folder's store.txt names it (and
    never the password); a cell not kept leaves no schema."""
    engine = Engine(EngineConfig(store=pg_url, work_root=tmp_path / "work", keep=keep))
    result = engine.run_cell(
        kinds.parse_cell("reference/research/tool-batch/postgresql/after-checkpoint:1")
    )
    assert "ok" == result.verdict, result.detail
    left = schemas(pg_url)
    if keep == "none":
        assert (None, set()) == (result.kept, left)
        return
    assert result.kept is not None
    # The cell's schema, and with everything kept, both baselines' too.
    assert 3 == len(left)
    note = (Path(result.kept) / KEPT_NOTE).read_text()
    [schema] = [s for s in left if s in note]
    assert f'DROP SCHEMA "{schema}" CASCADE' in note


def test_a_kept_stores_note_never_names_the_password(tmp_path: Path) -> None:
    """The note names the server as the terminal shows it: the password masked."""
    stores = PostgresStores("postgresql+psycopg://kp:s3cret-pw@db.example:5432/shop")
    stores.keep(schema_url(stores.url, "kp_0123"), tmp_path)
    note = (tmp_path / KEPT_NOTE).read_text()
    assert "s3cret-pw" not in note
    assert "kp:***@db.example:5432/shop" in note and 'DROP SCHEMA "kp_0123"' in note


def test_a_store_its_folder_cannot_name_is_dropped(pg_url: str, store: str, tmp_path: Path) -> None:
    """Keeping a cell on a full disk: the note naming its schema cannot be written, and a
    schema named nowhere would stay on the server for good, so it is dropped and the cell
    goes on (no exception reaches the campaign)."""
    engine = Engine(EngineConfig(store=pg_url, work_root=tmp_path / "work", keep="all"))
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("")  # writing the note below it fails like a full disk
    [schema] = [s for s in schemas(pg_url) if s in store]
    engine.keep_store(store, not_a_folder)
    assert schema not in schemas(pg_url)


def test_the_guides_statement_drops_killpoints_schemas_and_no_other(
    stores: PostgresStores, pg_url: str, tmp_path: Path
) -> None:
    """docs/how-to/postgresql.md's psql statement for dropping every kept schema, run here
    as psql's `\\gexec` would: it drops what `fresh` makes and leaves a user's `kp_`-named
    schema."""
    guide = (REPO_ROOT / "docs" / "how-to" / "postgresql.md").read_text()
    found = re.search(r"`(SELECT format\('DROP SCHEMA[^`]*?) \\gexec`", guide)
    assert found, "docs/how-to/postgresql.md no longer shows the statement"
    select = " ".join(found.group(1).split())
    ours = schema_of(stores.fresh(tmp_path))
    engine = create_engine(pg_url)
    try:
        with engine.begin() as conn:
            conn.execute(text('CREATE SCHEMA IF NOT EXISTS "kp_mine"'))
            for statement in conn.execute(text(select)).scalars().all():
                conn.execute(text(statement))
        assert ours is not None and ours not in schemas(pg_url)
        with engine.connect() as conn:
            assert conn.execute(text("SELECT to_regnamespace('kp_mine')")).scalar()
    finally:
        with engine.begin() as conn:
            conn.execute(text('DROP SCHEMA IF EXISTS "kp_mine"'))
        engine.dispose()


# -- a connection refused: the fix fits why ---------------------------------------------------

SECRET = "s3cret-pw"


def refused(url: str) -> str:
    """The message of the store check that fails on `url`."""
    with pytest.raises(StoreError) as caught:
        PostgresStores(url).check()
    return str(caught.value)


def test_an_unknown_user_is_told_to_fix_the_user_not_to_start_the_server(pg_url: str) -> None:
    """The server answered (it is up): "start the server" would send the user the wrong way.
    (The test server trusts every password, so a user it does not know stands for a bad
    password here: both are SQLSTATE class 28.)"""
    url = make_url(pg_url).set(username="kp_no_such_user", password=SECRET)
    message = refused(url.render_as_string(hide_password=False))
    assert 'role "kp_no_such_user" does not exist' in message
    assert message.endswith(f"; {FIX_USER}"), message
    assert SECRET not in message and "start the server" not in message


def test_a_missing_database_is_told_to_create_it(pg_url: str) -> None:
    url = make_url(pg_url).set(database="kp_no_such_db", password=SECRET)
    message = refused(url.render_as_string(hide_password=False))
    assert 'database "kp_no_such_db" does not exist' in message
    assert message.endswith(
        "; create it (e.g. `createdb kp_no_such_db`) or fix the database name in --store"
    ), message
    assert SECRET not in message and "start the server" not in message


def test_a_server_that_is_not_there_is_told_to_start_it_or_fix_host_and_port() -> None:
    message = refused(f"postgresql+psycopg://kp:{SECRET}@127.0.0.1:1/db")
    assert "Connection refused" in message and message.endswith(f"; {FIX_SERVER}"), message
    assert SECRET not in message


def test_a_failed_password_is_told_to_fix_the_user_or_password() -> None:
    """libpq's words for a password the server refused (psycopg gives no SQLSTATE for an
    error while connecting): the test server trusts every password, so they are given here
    as the driver raises them."""
    words = 'connection failed: FATAL:  password authentication failed for user "kpuser"'
    assert FIX_USER == connect_fix(psycopg.OperationalError(words), "kpdb")
