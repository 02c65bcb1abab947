"""Reading DBOS's SQLite system database from the engine: a session's workflows (status,
inputs, output) and each one's recorded steps, decoded with DBOS's own serializer, and
killpoint's count of landed writes.

Nothing here writes, and a store that does not exist yet reads as empty (connecting
would create the file). Each read opens a connection of its own (the engine reads from
several threads, on stores whose workers may have been killed mid-write).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from sqlalchemy.engine import make_url

from killpoint.adapters.pydantic_ai.agent import SESSION_ATTRIBUTE
from killpoint.adapters.pydantic_ai.writes import COUNTER_TABLE


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
    def __init__(self, conn: sqlite3.Connection | None) -> None:
        self.conn = conn
        self.tables: set[str] = set()
        if conn is not None:
            names = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            self.tables = {str(n) for (n,) in names}

    @property
    def empty(self) -> bool:
        return self.conn is None or "workflow_status" not in self.tables

    def landed(self, session_id: str) -> int:
        """Counter rows of the session's workflows: one per durable write that landed."""
        if self.empty or COUNTER_TABLE not in self.tables:
            return 0
        assert self.conn is not None
        row = self.conn.execute(
            f"SELECT COUNT(*) FROM {COUNTER_TABLE} k JOIN workflow_status w "
            "ON w.workflow_uuid = k.workflow_id WHERE json_extract(w.attributes, ?) = ?",
            (f"$.{SESSION_ATTRIBUTE}", session_id),
        ).fetchone()
        return int(row[0])

    def workflows(self, session_id: str) -> list[Workflow]:
        """The session's workflows in the order they were started, with their steps."""
        if self.empty:
            return []
        assert self.conn is not None
        rows = self.conn.execute(
            "SELECT w.workflow_uuid, w.status, w.serialization, i.inputs, o.output, o.error, "
            "w.recovery_attempts FROM workflow_status w "
            "LEFT JOIN workflow_input i ON i.workflow_uuid = w.workflow_uuid "
            "LEFT JOIN workflow_output o ON o.workflow_uuid = w.workflow_uuid "
            "WHERE json_extract(w.attributes, ?) = ? ORDER BY w.created_at, w.workflow_uuid",
            (f"$.{SESSION_ATTRIBUTE}", session_id),
        ).fetchall()
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
            steps = self.conn.execute(
                "SELECT function_id, function_name, output, error, serialization "
                "FROM operation_outputs WHERE workflow_uuid = ? ORDER BY function_id",
                (wid,),
            ).fetchall()
            workflow.steps = [
                Step(int(fid), str(name), _decode(o, s), _decode_error(e, s))
                for fid, name, o, e, s in steps
            ]
            out.append(workflow)
        return out

    def integrity(self) -> str | None:
        """SQLite's integrity_check when it is not "ok" (None when there is no file)."""
        if self.conn is None:
            return None
        verdict = self.conn.execute("PRAGMA integrity_check").fetchone()[0]
        return None if verdict == "ok" else str(verdict)


@contextlib.contextmanager
def reader(store_url: str) -> Iterator[Reader]:
    """A Reader of the store's system database (empty when the file does not exist)."""
    path = make_url(store_url).database or ""
    if not Path(path).exists():
        yield Reader(None)
        return
    conn = sqlite3.connect(f"file:{path}?mode=rw", uri=True, check_same_thread=False)
    try:
        yield Reader(conn)
    finally:
        conn.close()
