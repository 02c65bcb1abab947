"""The engine's reads of a reference store on SQLite, made with the sqlite3 module itself.

The engine reads each cell's store a few times (the checkpoints landed while it waits for a
point, the session after the crash and after the resume, the store's soundness) and every
cell has a store of its own. Through the runtime's Store each cell paid for a SQLAlchemy
engine, its first connection and a look at the catalog, and each read for SQLAlchemy's
statement machinery: about 6 ms of the engine's CPU per cell. Here a cell pays for one
sqlite3 connection.

What is read is the runtime's own: the same statements (killpoint.runtime.store.sql) and
the same decoding of their rows (session_from_row, run_from_rows). Each read of several
statements is one transaction, so it sees one state of the store, as Store.reading()
does. PostgreSQL stores are read through the runtime's Store.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import namedtuple
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy.engine import make_url

from killpoint.runtime.store import schema, sql
from killpoint.runtime.store.engine import lock_wait, normalise_url
from killpoint.runtime.store.store import StoredRun, run_from_rows, session_from_row

PROGRESS = "SELECT coalesce(sum(checkpoints), 0) FROM kp_runs WHERE session_id = :session_id"
LEASE_DEADLINE = (
    "SELECT max(lease_expires_at) FROM kp_runs WHERE session_id = :session_id AND owner IS NOT NULL"
)


def _rows(cursor: sqlite3.Cursor, row: tuple[Any, ...]) -> Any:
    """Rows with attribute access, one named-tuple class per statement's columns."""
    names = tuple(d[0] for d in cursor.description)
    return _row_class(names)(*row)


_classes: dict[tuple[str, ...], Any] = {}


def _row_class(names: tuple[str, ...]) -> Any:
    found = _classes.get(names)
    if found is None:
        # rename: a column such as `coalesce(sum(checkpoints), 0)` is read by position.
        found = _classes[names] = namedtuple("Row", names, rename=True)
    return found


class SqliteReads:
    """One store's reads: progress, lease deadline, session, runs, integrity."""

    def __init__(self, url: str) -> None:
        parsed = make_url(normalise_url(url))
        self.path = parsed.database or ""
        self.timeout = lock_wait(parsed)  # the runtime's own connections' busy timeout
        self._conn: sqlite3.Connection | None = None
        self._has_runs = False
        # One transaction at a time on the one connection, whichever thread reads.
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            if self._conn is not None:
                self._conn.close()
                self._conn = None

    @contextmanager
    def reading(self) -> Iterator[sqlite3.Connection]:
        """One read transaction (a WAL reader: it neither waits for nor blocks a writer)."""
        with self._lock:
            if self._conn is None:
                # Autocommit, so that BEGIN and ROLLBACK below are the only transaction.
                self._conn = sqlite3.connect(
                    self.path, timeout=self.timeout, isolation_level=None, check_same_thread=False
                )
                self._conn.row_factory = _rows
            conn = self._conn
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                conn.execute("ROLLBACK")

    def has_schema(self) -> bool:
        """Whether the runtime's tables exist: asked until they do, then known."""
        if not self._has_runs:
            with self.reading() as conn:
                tables = {r[0] for r in conn.execute(sql.TABLES["sqlite"].sql)}
                self._has_runs = schema.runs.name in tables
        return self._has_runs

    def progress(self, session_id: str) -> int:
        if not self.has_schema():  # a store a power cut took back to empty
            return 0
        with self.reading() as conn:
            return int(conn.execute(PROGRESS, {"session_id": session_id}).fetchone()[0])

    def lease_deadline(self, session_id: str) -> float | None:
        with self.reading() as conn:
            found = conn.execute(LEASE_DEADLINE, {"session_id": session_id}).fetchone()[0]
        return None if found is None else float(found)

    def integrity(self) -> str:
        with self.reading() as conn:
            return str(conn.execute("PRAGMA integrity_check").fetchone()[0])

    def session(self, session_id: str) -> tuple[dict[str, Any] | None, list[StoredRun]]:
        """The session (None when there is none) and its runs, whole, in one transaction."""
        if not self.has_schema():
            return None, []
        key = {"session_id": session_id}
        with self.reading() as conn:
            row = conn.execute(sql.SESSION.sql, key).fetchone()
            if row is None:
                return None, []
            run_ids = [r[0] for r in conn.execute(sql.SESSION_RUN_IDS.sql, key)]
            runs = []
            for run_id in run_ids:
                found = self._run(conn, run_id)
                if found is not None:
                    runs.append(found)
        return session_from_row(row, run_ids), runs

    def _run(self, conn: sqlite3.Connection, run_id: str) -> StoredRun | None:
        key = {"run_id": run_id}
        row = conn.execute(sql.RUN.sql, key).fetchone()
        if row is None:
            return None
        bodies = [r[0] for r in conn.execute(sql.MESSAGES.sql, key)]
        execs = conn.execute(sql.EXECUTIONS.sql, key).fetchall()
        return run_from_rows(row, bodies, execs)


__all__ = ["SqliteReads"]
