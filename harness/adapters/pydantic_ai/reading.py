"""Reading DBOS's system database from the engine (its SQLite file, or the cell's schema
on PostgreSQL): a session's workflows (status, inputs, output) and each one's recorded
steps, decoded with DBOS's own serializer, and killpoint's count of landed writes.

Nothing here writes, and a store that does not exist yet reads as empty (connecting
would create the file). A SQLite read opens a connection of its own (the engine reads from
several threads, on stores whose workers may have been killed mid-write); PostgreSQL
connections are kept per store URL, so that polling `progress` does not pay a connection
each time.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from killpoint.adapters.pydantic_ai.system_db import SESSION_ATTRIBUTE, is_postgres
from killpoint.adapters.pydantic_ai.writes import COUNTER_TABLE
from killpoint.stores.per_url import PerUrl
from killpoint.stores.postgresql import conninfo

# The terminal statuses DBOS's outcome write sets (on PostgreSQL, how outcomes are counted).
OUTCOMES = ("SUCCESS", "ERROR")


@dataclass
class Step:
    function_id: int
    name: str
    output: Any
    error: Any


@dataclass
class Workflow:
    workflow_id: str
    status: str
    inputs: dict[str, Any] | None
    output: Any
    error: Any
    recovery_attempts: int
    steps: list[Step] = field(default_factory=list)


def _decode(value: str | None, serialization: str | None) -> Any:
    from dbos._serialization import DefaultSerializer, deserialize_value

    return deserialize_value(value, serialization, DefaultSerializer())


def _decode_error(value: str | None, serialization: str | None) -> Any:
    if value is None:
        return None
    try:
        from dbos._serialization import DefaultSerializer, deserialize_exception

        return deserialize_exception(value, serialization, DefaultSerializer())
    except Exception:
        return value  # shown as stored: an error DBOS cannot rebuild is still an error


def _decode_inputs(value: str | None, serialization: str | None) -> dict[str, Any] | None:
    if value is None:
        return None
    from dbos._serialization import DefaultSerializer, deserialize_args

    return dict(deserialize_args(value, serialization, DefaultSerializer()))


class Reader:
    def __init__(self, conn: Any, tables: set[str], *, postgres: bool = False) -> None:
        self.conn = conn
        self.tables = tables
        self.postgres = postgres
        # The session's workflows: its id in their attributes (JSON text on SQLite, JSONB
        # on PostgreSQL).
        self.of_session = (
            f"w.attributes ->> '{SESSION_ATTRIBUTE}' = ?"
            if postgres
            else f"json_extract(w.attributes, '$.{SESSION_ATTRIBUTE}') = ?"
        )

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[tuple[Any, ...]]:
        assert self.conn is not None
        if not self.postgres:
            return list(self.conn.execute(sql, tuple(params)).fetchall())
        with self.conn.cursor() as cur:
            cur.execute(sql.replace("?", "%s"), tuple(params))
            return list(cur.fetchall())

    @property
    def empty(self) -> bool:
        return self.conn is None or "workflow_status" not in self.tables

    def landed(self, session_id: str) -> int:
        """One per durable write of the session's workflows that landed: its counter row
        (on PostgreSQL the outcomes have none: their terminal status counts them)."""
        if self.empty or COUNTER_TABLE not in self.tables:
            return 0
        ((counted,),) = self.rows(
            f"SELECT COUNT(*) FROM {COUNTER_TABLE} k JOIN workflow_status w "
            f"ON w.workflow_uuid = k.workflow_id WHERE {self.of_session}",
            (session_id,),
        )
        if not self.postgres:
            return int(counted)
        ((ended,),) = self.rows(
            f"SELECT COUNT(*) FROM workflow_status w WHERE {self.of_session} "
            "AND w.status IN (?, ?)",
            (session_id, *OUTCOMES),
        )
        return int(counted) + int(ended)

    def completed_before(self, session_id: str, run_id: str) -> list[str]:
        """Workflow ids of the session's runs that completed, other than `run_id`, oldest
        first."""
        if self.empty:
            return []
        found = self.rows(
            f"SELECT w.workflow_uuid FROM workflow_status w WHERE w.status = 'SUCCESS' "
            f"AND {self.of_session} AND w.workflow_uuid != ? "
            "ORDER BY w.created_at, w.workflow_uuid",
            (session_id, run_id),
        )
        return [str(wid) for (wid,) in found]

    def workflows(self, session_id: str) -> list[Workflow]:
        """The session's workflows in the order they were started, with their steps."""
        if self.empty:
            return []
        rows = self.rows(
            "SELECT w.workflow_uuid, w.status, w.serialization, i.inputs, o.output, o.error, "
            "w.recovery_attempts FROM workflow_status w "
            "LEFT JOIN workflow_input i ON i.workflow_uuid = w.workflow_uuid "
            "LEFT JOIN workflow_output o ON o.workflow_uuid = w.workflow_uuid "
            f"WHERE {self.of_session} ORDER BY w.created_at, w.workflow_uuid",
            (session_id,),
        )
        out = []
        for wid, status, serialization, inputs, output, error, attempts in rows:
            workflow = Workflow(
                str(wid),
                str(status),
                _decode_inputs(inputs, serialization),
                _decode(output, serialization),
                _decode_error(error, serialization),
                int(attempts or 0),
            )
            steps = self.rows(
                "SELECT function_id, function_name, output, error, serialization "
                "FROM operation_outputs WHERE workflow_uuid = ? ORDER BY function_id",
                (wid,),
            )
            workflow.steps = [
                Step(int(fid), str(name), _decode(o, s), _decode_error(e, s))
                for fid, name, o, e, s in steps
            ]
            out.append(workflow)
        return out

    def integrity(self) -> str | None:
        """SQLite's integrity_check when it is not "ok" (None on PostgreSQL, or when there
        is no file)."""
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
    """A Reader of the store's system database (empty when the file does not exist, or
    the schema has no tables yet)."""
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
