"""Reading DatabaseSessionService's tables from the engine (its SQLite file, or the cell's
schema on PostgreSQL): a session's state and its events, in the order ADK reads them.

Nothing here writes, and a store that does not exist yet reads as empty (connecting would
create the file). A SQLite read opens a connection of its own (the engine reads from
several threads, on stores whose workers may have been killed mid-write); PostgreSQL
connections are kept per store URL, so that polling `progress` does not pay a connection
each time.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from killpoint.adapters.adk.agent import APP, USER
from killpoint.stores.per_url import PerUrl
from killpoint.stores.postgresql import conninfo, is_postgres


def _json(value: Any) -> Any:
    return json.loads(value) if isinstance(value, (str, bytes)) else value


class Reader:
    def __init__(self, conn: Any, tables: set[str], *, postgres: bool = False) -> None:
        self.conn = conn
        self.tables = tables
        self.postgres = postgres

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        if not self.postgres:
            return list(self.conn.execute(sql, tuple(params)).fetchall())
        with self.conn.cursor() as cur:
            cur.execute(sql.replace("?", "%s"), tuple(params))
            return list(cur.fetchall())

    @property
    def empty(self) -> bool:
        return self.conn is None or not {"sessions", "events"} <= self.tables

    def landed(self, session_id: str) -> int:
        """One per event of the session: each append_event that landed wrote exactly one
        row, in the transaction that committed it."""
        if self.empty:
            return 0
        ((n,),) = self.rows(
            "SELECT COUNT(*) FROM events WHERE app_name = ? AND user_id = ? AND session_id = ?",
            (APP, USER, session_id),
        )
        return int(n)

    def state(self, session_id: str) -> tuple[bool, Any]:
        """(whether the session row exists, its state)."""
        if self.empty:
            return False, None
        found = self.rows(
            "SELECT state FROM sessions WHERE app_name = ? AND user_id = ? AND id = ?",
            (APP, USER, session_id),
        )
        return (True, _json(found[0][0])) if found else (False, None)

    def events(self, session_id: str) -> list[tuple[str, Mapping[str, Any]]]:
        """(invocation id, event) of the session, ordered as ADK's get_session orders them
        (by timestamp, ties by id)."""
        if self.empty:
            return []
        found = self.rows(
            "SELECT invocation_id, event_data FROM events "
            "WHERE app_name = ? AND user_id = ? AND session_id = ? ORDER BY timestamp, id",
            (APP, USER, session_id),
        )
        return [(str(inv), _json(data) or {}) for inv, data in found]

    def integrity(self) -> str | None:
        """SQLite's integrity_check when it is not "ok" (None on PostgreSQL)."""
        if self.conn is None or self.postgres:
            return None
        verdict = self.conn.execute("PRAGMA integrity_check").fetchone()[0]
        return None if verdict == "ok" else str(verdict)


def _pg_connect(url: str) -> Any:
    import psycopg

    return psycopg.connect(conninfo(url), autocommit=True, prepare_threshold=0)


# Few: a campaign runs a few cells at once, each on a schema of its own.
_pg: PerUrl[Any] = PerUrl(_pg_connect, lambda conn: conn.close(), kept=16)


@contextlib.contextmanager
def reader(store_url: str) -> Iterator[Reader]:
    """A Reader of the store (empty when the file does not exist, or the schema has no
    tables yet)."""
    if is_postgres(store_url):
        conn = _pg(store_url)
        with conn.cursor() as cur:
            cur.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema()"
            )
            tables = {str(name) for (name,) in cur.fetchall()}
        yield Reader(conn, tables, postgres=True)
        return
    path = make_url(store_url).database or ""
    if not Path(path).exists():
        yield Reader(None, set())
        return
    conn = sqlite3.connect(f"file:{path}?mode=rw", uri=True, check_same_thread=False)
    try:
        names = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
        yield Reader(conn, {str(n) for (n,) in names})
    finally:
        conn.close()
