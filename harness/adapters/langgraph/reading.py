"""Reading a LangGraph store from the engine: the checkpoint tree of a thread, single
checkpoints with their pending writes (through LangGraph's own sync savers, so that what
is read is what LangGraph would load), and killpoint's count of landed writes.

Nothing here writes: the savers are marked as set up, so that they never run their
migrations against a store under test; a store that does not exist reads as empty.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from killpoint.adapters.langgraph.savers import COUNTER_TABLE, conninfo, is_postgres, sqlite_path
from killpoint.stores.per_url import PerUrl

TABLES = ("checkpoints", "writes", "checkpoint_writes", "checkpoint_blobs", COUNTER_TABLE)


@dataclass(frozen=True)
class Node:
    """One checkpoint of a thread, without its state."""

    checkpoint_id: str
    parent_id: str | None
    metadata: dict[str, Any]


class Reader:
    """One store, read through a connection of its own (SQLite) or a kept one (PostgreSQL)."""

    def __init__(self, store_url: str, conn: Any, tables: set[str]) -> None:
        self.store_url = store_url
        self.conn = conn
        self.tables = tables
        self.postgres = is_postgres(store_url)
        self._saver: Any = None

    @property
    def empty(self) -> bool:
        return "checkpoints" not in self.tables

    def _rows(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        if self.postgres:
            with self.conn.cursor() as cur:
                cur.execute(sql.replace("?", "%s"), params)
                return [tuple(r.values()) for r in cur.fetchall()]
        return self.conn.execute(sql, params).fetchall()

    def landed(self, thread_id: str) -> int:
        """Rows of the counter table: one per durable write that landed (savers.py)."""
        if COUNTER_TABLE not in self.tables:
            return 0
        sql = f"SELECT COUNT(*) FROM {COUNTER_TABLE} WHERE thread_id = ?"
        return int(self._rows(sql, (thread_id,))[0][0])

    def counter(self, thread_id: str) -> list[tuple[int, str, str, str | None]]:
        """(n, kind, checkpoint id, task id) of every landed write, in landing order."""
        if COUNTER_TABLE not in self.tables:
            return []
        sql = (
            f"SELECT n, kind, checkpoint_id, task_id FROM {COUNTER_TABLE} "
            "WHERE thread_id = ? ORDER BY n"
        )
        return [tuple(r) for r in self._rows(sql, (thread_id,))]

    def tree(self, thread_id: str) -> list[Node]:
        """Every checkpoint of the thread (root namespace), oldest first: LangGraph's ids
        are UUIDv6, ordered by time, and LangGraph itself takes the greatest as the head."""
        if self.empty:
            return []
        sql = (
            "SELECT checkpoint_id, parent_checkpoint_id, metadata FROM checkpoints "
            "WHERE thread_id = ? AND checkpoint_ns = '' ORDER BY checkpoint_id"
        )
        out = []
        for cid, parent, metadata in self._rows(sql, (thread_id,)):
            if isinstance(metadata, (bytes, str)):
                metadata = json.loads(metadata)
            out.append(Node(str(cid), str(parent) if parent else None, dict(metadata or {})))
        return out

    def checkpoint(self, thread_id: str, checkpoint_id: str) -> Any:
        """LangGraph's CheckpointTuple (state and pending writes) of one checkpoint."""
        config = {
            "configurable": {
                "thread_id": thread_id,
                "checkpoint_ns": "",
                "checkpoint_id": checkpoint_id,
            }
        }
        return self.saver.get_tuple(config)

    @property
    def saver(self) -> Any:
        if self._saver is None:
            if self.postgres:
                from langgraph.checkpoint.postgres import PostgresSaver

                self._saver = PostgresSaver(self.conn)
            else:
                from langgraph.checkpoint.sqlite import SqliteSaver

                self._saver = SqliteSaver(self.conn)
                self._saver.is_setup = True  # never migrate a store under test
                if hasattr(self._saver, "_has_task_path"):
                    # A store an older saver wrote has no writes.task_path, which the saver's
                    # own setup() adds; unmigrated, the saver reads it without (as it does
                    # where the ALTER fails).
                    columns = {row[1] for row in self.conn.execute("PRAGMA table_info(writes)")}
                    self._saver._has_task_path = "task_path" in columns
        return self._saver

    def integrity(self) -> str | None:
        """SQLite's integrity_check when it is not "ok" (None on PostgreSQL, or when the
        file does not exist)."""
        if self.postgres or self.conn is None:
            return None
        verdict = self.conn.execute("PRAGMA integrity_check").fetchone()[0]
        return None if verdict == "ok" else str(verdict)


def _pg_connect(url: str) -> Any:
    import psycopg
    from psycopg.rows import dict_row

    return psycopg.connect(
        conninfo(url), autocommit=True, prepare_threshold=0, row_factory=dict_row
    )


# Kept per store URL (each cell has a schema of its own): a poll of `progress` must not pay
# a connection each time. Few: a campaign runs a few cells at once.
_pg: PerUrl[Any] = PerUrl(_pg_connect, lambda conn: conn.close(), kept=16)


@contextlib.contextmanager
def reader(store_url: str) -> Iterator[Reader]:
    """A Reader of the store (empty when the store does not exist yet)."""
    if is_postgres(store_url):
        conn = _pg(store_url)
        with conn.cursor() as cur:
            cur.execute(
                "SELECT table_name FROM information_schema.tables "
                "WHERE table_schema = current_schema() AND table_name = ANY(%s)",
                (list(TABLES),),
            )
            tables = {r["table_name"] for r in cur.fetchall()}
        yield Reader(store_url, conn, tables)
        return
    path, _ = sqlite_path(store_url)
    if not Path(path).exists():
        yield Reader(store_url, None, set())
        return
    conn = sqlite3.connect(f"file:{path}?mode=rw", uri=True, check_same_thread=False)
    try:
        names = conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'").fetchall()
        yield Reader(store_url, conn, {n for (n,) in names} & set(TABLES))
    finally:
        conn.close()
