"""Engines for the store: SQLite (WAL, BEGIN IMMEDIATE for writers) or PostgreSQL (psycopg 3)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError

from ..errors import ConfigurationError

SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")

# Execution option a writer sets so its transaction takes SQLite's write lock up front.
# Readers (the runtime's reads, a harness polling the store) never take it, so a
# reader can look at the store while a writer is stopped inside its transaction.
WRITER = "kp_writer"


def normalise_url(url: str) -> str:
    """Accept a path, `sqlite:///...`, or `postgresql[+psycopg]://...`; name the fix otherwise."""
    if "://" not in url:
        if not url or url == ":memory:":
            raise ConfigurationError(
                f"runtime: store {url!r} is not a file; give a path such as 'runs.db' or a "
                "'sqlite:///path' / 'postgresql+psycopg://user@host/db' URL"
            )
        return f"sqlite:///{url}"
    try:
        parsed = make_url(url)
    except ArgumentError as exc:
        raise ConfigurationError(
            f"runtime: store URL {url!r} is malformed ({exc}); expected 'sqlite:///path' or "
            "'postgresql+psycopg://user@host/db'"
        ) from None
    backend = parsed.get_backend_name()
    if backend == "postgresql":
        return parsed.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    if backend == "sqlite":
        if not parsed.database or parsed.database == ":memory:":
            raise ConfigurationError(
                f"runtime: store URL {url!r} names no file; crash tests need a file that "
                "outlives the worker, e.g. 'sqlite:///runs.db'"
            )
        return url
    raise ConfigurationError(
        f"runtime: store URL {url!r} uses {backend!r}; supported: 'sqlite:///path', "
        "'postgresql+psycopg://user@host/db'"
    )


def make_engine(url: str, *, synchronous: str = "FULL", **kwargs: Any) -> Engine:
    url = normalise_url(url)
    if url.startswith("sqlite"):
        return _sqlite_engine(url, synchronous=synchronous, **kwargs)
    return create_engine(url, pool_pre_ping=True, **kwargs)


def lock_wait(parsed: URL) -> float:
    """How long a SQLite connection waits for a lock: `?timeout=SECONDS` in the URL, as
    for sqlite3.connect (default 30 s)."""
    return float(parsed.query.get("timeout", 30))  # type: ignore[arg-type]


def _sqlite_engine(url: str, *, synchronous: str, **kwargs: Any) -> Engine:
    if synchronous.upper() not in SYNCHRONOUS:
        raise ConfigurationError(
            f"runtime: synchronous={synchronous!r} is not a SQLite level; choose one of "
            f"{', '.join(SYNCHRONOUS)}"
        )
    parsed = make_url(url)
    wait = lock_wait(parsed)
    busy_ms = int(wait * 1000)
    engine = create_engine(
        parsed.difference_update_query(["timeout"]), connect_args={"timeout": wait}, **kwargs
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_conn: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event emit BEGIN itself (pysqlite would defer it).
        dbapi_conn.isolation_level = None
        cur = dbapi_conn.cursor()
        cur.execute("PRAGMA journal_mode=WAL")
        cur.execute(f"PRAGMA synchronous={synchronous.upper()}")
        cur.execute("PRAGMA foreign_keys=ON")
        cur.execute(f"PRAGMA busy_timeout={busy_ms}")
        cur.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        # A deferred BEGIN lets two writers both read, then one fails with SQLITE_BUSY
        # when upgrading to a write lock; IMMEDIATE takes the lock up front and waits.
        if conn.get_execution_options().get(WRITER):
            conn.exec_driver_sql("BEGIN IMMEDIATE")
        else:
            conn.exec_driver_sql("BEGIN")

    return engine
