"""A PostgreSQL server: every baseline and cell gets a schema of its own in one database.

A cell's URL selects its schema with libpq's `options=-csearch_path=SCHEMA`; `schema_url`
writes that and `schema_of` reads it back (adapters that qualify their tables ask here).
"""

from __future__ import annotations

import contextlib
import os
import shlex
import subprocess
import threading
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path

from sqlalchemy import create_engine, text
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError, SQLAlchemyError
from sqlalchemy.pool import NullPool

from killpoint.errors import StoreError, StoreLeftover, StoreUnavailable
from killpoint.stores.urls import clean_authority
from killpoint.stores.urls import shown as shown_url

PREFIX = "kp_"  # every schema killpoint makes, and the only ones it drops
# A command that restarts the campaign's server (store-restart): killpoint cannot restart
# a server it did not start (it runs as another user, maybe on another machine).
RESTART_ENV = "KILLPOINT_STORE_RESTART"
RESTART_HINT = (
    f"set {RESTART_ENV} to a command that restarts it (e.g. 'pg_ctl -D DATA -m immediate "
    "-w restart', or 'docker restart NAME')"
)
CONNECT_TIMEOUT = 5  # seconds: a probe of a server that does not answer
# Every connection killpoint makes itself gives up after CONNECT_TIMEOUT: a server that
# accepts the connection and never answers (its postmaster stopped) must not hold a cell.
BOUNDED = {"connect_timeout": CONNECT_TIMEOUT}


def lost_connection(exc: BaseException) -> bool:
    """The server is gone or not taking connections (stopped, restarting), as opposed
    to an error in what was asked of it."""
    if isinstance(exc, (OperationalError, InterfaceError)):
        return True
    return isinstance(exc, DBAPIError) and bool(exc.connection_invalidated)


def reason(exc: BaseException) -> str:
    """The driver's first line: 'connection refused', 'the database system is shutting down'."""
    orig = getattr(exc, "orig", None) or exc
    lines = str(orig).strip().splitlines()
    return lines[0] if lines else type(orig).__name__


# The SQLSTATEs of a refused connection (a server that answered): the class of a bad
# user or password, and a database that does not exist.
AUTHENTICATION = "28"  # 28P01 invalid_password, 28000 invalid_authorization_specification
NO_DATABASE = "3D000"  # invalid_catalog_name
FIX_USER = "fix the user or password in --store (or KILLPOINT_STORE)"
FIX_SERVER = "start the server or fix the host or port in --store (or KILLPOINT_STORE)"


def connect_fix(exc: BaseException, database: str | None) -> str:
    """What to do about a connection the server refused or that never reached one: a
    server that answered (wrong password, no such database) is up, and "start the
    server" would send the user the wrong way. The SQLSTATE decides when the driver gives
    one; psycopg gives none for an error during the connection's start, so its words
    (libpq's, in English whatever the server's locale for these messages) decide then."""
    orig = getattr(exc, "orig", None) or exc
    state = str(getattr(orig, "sqlstate", None) or "")
    words = str(orig)
    if state.startswith(AUTHENTICATION) or any(
        w in words
        for w in (
            "password authentication failed",
            "no password supplied",
            "authentication failed for user",
            'role "',  # FATAL: role "x" does not exist
            "no pg_hba.conf entry",
        )
    ):
        return FIX_USER
    if state == NO_DATABASE or ('database "' in words and "does not exist" in words):
        name = shlex.quote(database) if database else "NAME"
        return f"create it (e.g. `createdb {name}`) or fix the database name in --store"
    if any(w in words.casefold() for w in UNREACHED):
        return FIX_SERVER
    # Something else the server said (too many connections, shutting down): its words
    # above say what; the URL may still be right.
    return "see the server's reason above, or fix --store (or KILLPOINT_STORE)"


# libpq's words for a connection that reached no server: nothing listens at that host and
# port, the host has no address, or nothing answered in time.
UNREACHED = (
    "connection refused",
    "is the server running",
    "could not translate host name",
    "failed to resolve host",
    "name or service not known",
    "nodename nor servname",
    "no route to host",
    "timeout expired",
    "timed out",
    "no such file or directory",  # a Unix socket that is not there
)


KEPT_NOTE = "store.txt"  # in a kept cell's folder: where its schema is
TABLES = "SELECT tablename FROM pg_tables WHERE schemaname = current_schema()"


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


def is_postgres(store_url: str) -> bool:
    """Whether a store URL names a PostgreSQL server (any driver)."""
    return make_url(store_url).get_backend_name() == "postgresql"


def conninfo(store_url: str) -> str:
    """A psycopg conninfo for a PostgreSQL store URL, its query (the options: the cell's
    search_path, a lock timeout) passed as keywords: a libpq URI would take the "+" that
    stands for a space in the rendered URL literally."""
    from psycopg.conninfo import make_conninfo

    url = make_url(store_url)
    parts = {
        "host": url.host,
        "port": url.port,
        "user": url.username,
        "password": url.password,
        "dbname": url.database,
        **{k: str(v) for k, v in url.query.items()},
    }
    return make_conninfo("", **{k: v for k, v in parts.items() if v is not None})


class PostgresStores:
    kind = "postgresql"

    def __init__(self, option: str) -> None:
        self.url = make_url(option).set(drivername="postgresql+psycopg")
        # Decided once, from the option as given: with a second '@' in its authority the
        # parsed "host" holds the end of the password, so neither the URL's rendering nor a
        # driver message (which names the host) may be shown as is.
        self._clean = clean_authority(option)
        self._shown = shown_url(self.url.render_as_string(hide_password=False))
        self._restarts: dict[str, str] = {}  # server life -> the store URL that restarted it
        self._lock = threading.Lock()

    def shown(self) -> str:
        return self._shown

    def reason(self, exc: BaseException) -> str:
        """The driver's reason, unless the URL's host is not what the user meant: then the
        driver's words (failed to resolve host 'REST-OF-PASSWORD@HOST') would print part of
        the password, and what is wrong is the URL."""
        if self._clean:
            return reason(exc)
        return (
            "the URL has more than one '@' before its host, so its user, password and host "
            "cannot be told apart; percent-encode an '@' in the user or password as %40"
        )

    def check(self) -> None:
        engine = create_engine(self.url, connect_args=BOUNDED)
        try:
            with engine.connect() as conn:
                conn.execute(text("SELECT 1"))
        except SQLAlchemyError as exc:
            # With two '@' the reason is the URL itself, and says how to fix it.
            fix = f"; {connect_fix(exc, self.url.database)}" if self._clean else ""
            raise StoreError(
                f"killpoint: cannot reach the store {self.shown()}: {self.reason(exc)}{fix}"
            ) from None
        finally:
            engine.dispose()

    def fresh(self, work: Path) -> str:
        schema = f"{PREFIX}{uuid.uuid4().hex[:16]}"
        engine = create_engine(self.url, poolclass=NullPool, connect_args=BOUNDED)
        try:
            with engine.begin() as conn:
                conn.execute(text(f'CREATE SCHEMA "{schema}"'))
        except SQLAlchemyError as exc:
            if lost_connection(exc):
                raise StoreUnavailable(
                    f"the store server {self.shown()} is unavailable: {self.reason(exc)}"
                ) from None
            raise
        finally:
            engine.dispose()
        return schema_url(self.url, schema)

    # -- the server's life: outages and restarts ------------------------------------------

    def life(self) -> str:
        """When the server started (one value per life of the server: a restart changes
        it); StoreUnavailable when it cannot be reached."""
        engine = create_engine(self.url, poolclass=NullPool, connect_args=BOUNDED)
        try:
            with engine.connect() as conn:
                return str(conn.execute(text("SELECT pg_postmaster_start_time()")).scalar())
        except SQLAlchemyError as exc:
            raise StoreUnavailable(
                f"the store server {self.shown()} is unavailable: {self.reason(exc)}"
            ) from None
        finally:
            engine.dispose()

    def restarted_by(self, life: str) -> str | None:
        """The store URL of the cell whose store-restart began this life of the server."""
        with self._lock:
            return self._restarts.get(life)

    def restart_problem(self) -> str | None:
        """Why killpoint cannot restart this server, or None."""
        if os.environ.get(RESTART_ENV, "").strip():
            return None
        return (
            f"killpoint cannot restart the PostgreSQL server {self.shown()} it did not start; "
            + RESTART_HINT
        )

    def unsafe_to_restart(self) -> str | None:
        """Why a restart of this server would lose commits it acknowledged, or None: with
        synchronous_commit off, a commit returns before its WAL is written, and an
        immediate restart drops it, whatever the runtime did."""
        engine = create_engine(self.url, poolclass=NullPool, connect_args=BOUNDED)
        try:
            with engine.connect() as conn:
                setting = str(conn.execute(text("SHOW synchronous_commit")).scalar())
        except SQLAlchemyError as exc:
            return f"the store server {self.shown()} is unavailable: {self.reason(exc)}"
        finally:
            engine.dispose()
        if setting == "off":
            return (
                f"the store server {self.shown()} runs with synchronous_commit=off: a restart "
                "loses commits it acknowledged, whatever the runtime does; turn it on for "
                "store-restart"
            )
        return None

    def restart(self, by: str, wait: float) -> str:
        """Restart the server (its connections die) and wait until it answers again; its
        new life, recorded as `by`'s (a cell's store URL). StoreUnavailable on failure."""
        problem = self.restart_problem()
        if problem is not None:
            raise StoreUnavailable(problem)
        proc = subprocess.run(
            os.environ[RESTART_ENV],
            shell=True,  # the user's own command line, as they would type it
            capture_output=True,
            text=True,
            stdin=subprocess.DEVNULL,
            timeout=max(wait, 60.0),
            check=False,
        )
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or [""]
            raise StoreUnavailable(f"{RESTART_ENV} failed with status {proc.returncode}: {tail[0]}")
        from killpoint.stores.outage import wait_until_up

        life = wait_until_up(self, wait, threading.Event())
        with self._lock:
            self._restarts[life] = by
        return life

    def drop(self, url: str) -> None:
        schema = schema_of(url)
        if schema is None or not schema.startswith(PREFIX):
            return
        engine = create_engine(self.url, poolclass=NullPool, connect_args=BOUNDED)
        try:
            with engine.begin() as conn:
                conn.execute(text(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE'))
        except SQLAlchemyError as exc:
            raise StoreLeftover(
                f"schema {schema}",
                f"{self.shown()} (database {self.url.database})",
                f'DROP SCHEMA IF EXISTS "{schema}" CASCADE;',
                self.reason(exc),
            ) from None
        finally:
            engine.dispose()

    def keep(self, url: str, work: Path) -> None:
        schema = schema_of(url)
        # Kept with the folder, unless its whole database goes: the pytest plugin drops
        # each xdist worker's database when the session ends.
        note = work / KEPT_NOTE
        try:
            note.write_text(
                f"This cell's store is schema {schema} on {self.shown()}; it was left there "
                "with this folder (a database dropped since, such as a pytest-xdist "
                "worker's, took it along).\n"
                f"Read it with search_path={schema}; remove it with: "
                f'DROP SCHEMA "{schema}" CASCADE\n'
            )
        except OSError:
            with contextlib.suppress(OSError):
                note.unlink(missing_ok=True)  # no half-written note
            raise

    def with_lock_timeout(self, url: str, seconds: float) -> str:
        parsed = make_url(url)
        options = str(parsed.query.get("options", ""))
        options = f"{options} -clock_timeout={int(seconds * 1000)}".strip()
        return parsed.update_query_dict({"options": options}).render_as_string(hide_password=False)

    def tables(self, url: str) -> tuple[str, ...]:
        engine = create_engine(url, poolclass=NullPool, connect_args=BOUNDED)
        try:
            with engine.connect() as conn:
                return tuple(conn.execute(text(TABLES)).scalars())
        finally:
            engine.dispose()

    def hold_write_lock(self, url: str, tables: Sequence[str] = ()) -> Callable[[], None]:
        engine = create_engine(url, poolclass=NullPool, connect_args=BOUNDED)
        conn = engine.connect()
        conn.begin()
        present = list(conn.execute(text(TABLES)).scalars())
        for table in present:
            conn.execute(text(f'LOCK TABLE "{table}" IN EXCLUSIVE MODE'))
        # PostgreSQL locks tables, not a schema: a runtime that creates its tables at its
        # first write would meet no lock. A table of the same name made (uncommitted) here
        # makes its CREATE TABLE wait on this transaction, as long as the lock is held;
        # the rollback that releases the lock removes it.
        for table in sorted(set(tables) - set(present)):
            conn.execute(text(f'CREATE TABLE "{table}" ()'))

        def release() -> None:
            conn.rollback()
            conn.close()
            engine.dispose()

        return release


__all__ = ["PREFIX", "RESTART_ENV", "RESTART_HINT", "PostgresStores", "schema_of", "schema_url"]
