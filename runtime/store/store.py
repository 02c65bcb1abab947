"""The store: sessions, runs, append-only messages and tool executions.

A checkpoint is one transaction that writes only what is new since the previous
one, so its cost does not grow with the length of the run.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine, func, select
from sqlalchemy.exc import IntegrityError, SQLAlchemyError

from ..errors import RunNotContinuable, RunNotFound, RunOwnedElsewhere
from ..messages import Message, ToolExecution, Usage
from ..status import CONTINUABLE, RunStatus
from . import schema, sql
from .engine import WRITER, make_engine, normalise_url
from .ownership import Owner, holder_is_alive


def _dump(value: Any) -> str:
    return json.dumps(value, ensure_ascii=True, sort_keys=True)


def _load(value: str | None) -> Any:
    return None if value is None else json.loads(value)


@dataclass
class Checkpoint:
    """Everything one durable write carries."""

    run_id: str
    session_id: str
    agent_name: str
    mode: str
    status: RunStatus
    input: str
    content: str | None
    error: str | None
    usage: Usage
    last_checkpoint_at_message_index: int
    checkpoints: int
    first_new_index: int
    new_messages: list[Message]
    new_tool_executions: list[ToolExecution]
    pending_confirmations: list[str]
    session_state: dict[str, Any]
    owner: Owner
    expected_version: int | None  # None: the run has no row yet
    lease_expires_at: float | None  # None: release the run (terminal states)
    created_at: float
    cancel_after: int | None = None  # a write sets it, never clears it


@dataclass
class StoredRun:
    run_id: str
    session_id: str
    agent_name: str
    mode: str
    status: RunStatus
    input: str
    content: str | None
    error: str | None
    usage: Usage
    pending_confirmations: list[str]
    last_checkpoint_at_message_index: int
    checkpoints: int
    version: int
    owner: str | None
    cancel_after: int | None
    created_at: float
    updated_at: float
    messages: list[Message] = field(default_factory=list)
    tool_executions: list[ToolExecution] = field(default_factory=list)


def session_from_row(row: Any, run_ids: list[str]) -> dict[str, Any]:
    """A session as read: its row (any row with attribute access: SQLAlchemy's, a named
    tuple) and the ids of its runs in order."""
    return {
        "session_id": row.session_id,
        "agent_name": row.agent_name,
        "state": _load(row.state),
        "run_ids": run_ids,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }


def run_from_rows(row: Any, bodies: Iterable[str], execs: Iterable[Any]) -> StoredRun:
    """A run as read: its row, its messages' bodies in order and its tool executions'
    rows in call order (any rows with attribute access, as for session_from_row)."""
    return StoredRun(
        run_id=row.run_id,
        session_id=row.session_id,
        agent_name=row.agent_name,
        mode=row.mode,
        status=RunStatus(row.status),
        input=_load(row.input),
        content=_load(row.content),
        error=_load(row.error),
        usage=Usage.from_dict(_load(row.usage)),
        pending_confirmations=_load(row.pending_confirmations),
        last_checkpoint_at_message_index=row.last_checkpoint_at_message_index,
        checkpoints=row.checkpoints,
        version=row.version,
        owner=row.owner,
        cancel_after=row.cancel_after,
        created_at=row.created_at,
        updated_at=row.updated_at,
        messages=[Message.from_json(b) for b in bodies],
        tool_executions=[
            ToolExecution(
                call_id=e.call_id,
                name=e.name,
                arguments=_load(e.arguments),
                result=_load(e.result),
                status=e.status,
                turn=e.turn,
                call_index=e.call_index,
                idempotency_key=e.idempotency_key,
            )
            for e in execs
        ],
    )


class Store:
    """A SQLAlchemy-backed store. The engine is made lazily in the process that uses it:
    a connection pool inherited across fork would share sockets and SQLite locks.

    A process keeps one SQLite connection between uses (`_idle`) and checks the schema
    once: what a worker does with its store costs a statement each, not a pool checkout,
    a connection and a look at the catalog each. A second thread that needs the store
    while the first holds it gets a connection of its own for that use."""

    def __init__(self, url: str, *, synchronous: str = "FULL") -> None:
        self.url = normalise_url(url)
        self.synchronous = synchronous
        self._engine: Engine | None = None
        self._pid = -1
        self._schema_ready = False
        self._tables: frozenset[str] = frozenset()  # the kp_ tables seen (this process)
        self._idle: Connection | None = None
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Store({self.url!r})"

    @property
    def dialect(self) -> str:
        return "sqlite" if self.url.startswith("sqlite") else "postgresql"

    @property
    def engine(self) -> Engine:
        if self._engine is None or self._pid != os.getpid():
            # A parent's connection is neither used nor closed here (its socket or file
            # lock is the parent's): it is only forgotten.
            self._idle = None
            self._engine = make_engine(self.url, synchronous=self.synchronous)
            self._pid = os.getpid()
            self._schema_ready = False
            self._tables = frozenset()
        return self._engine

    def dispose(self) -> None:
        if self._engine is not None and self._pid == os.getpid():
            with self._lock:
                idle, self._idle = self._idle, None
            if idle is not None:
                idle.close()
            self._engine.dispose()
        self._engine = None
        self._idle = None

    # -- connections --------------------------------------------------------------------

    def _checkout(self) -> Connection:
        engine = self.engine
        with self._lock:
            conn, self._idle = self._idle, None
        if conn is None or conn.closed or conn.invalidated:
            conn = engine.connect()
        return conn

    def _checkin(self, conn: Connection) -> None:
        """Kept for the next use (SQLite); PostgreSQL's go back to the pool, whose ping
        at checkout finds a connection a server restart broke."""
        try:
            if conn.in_transaction():
                conn.rollback()  # a read's snapshot ends here
        except SQLAlchemyError:
            conn.invalidate()
        if self.dialect == "sqlite" and not conn.invalidated and self._pid == os.getpid():
            with self._lock:
                if self._idle is None:
                    self._idle = conn
                    return
        conn.close()

    @contextmanager
    def _connection(self, *, writer: bool) -> Iterator[Connection]:
        conn = self._checkout()
        try:
            conn.execution_options(**{WRITER: writer})
            yield conn
        finally:
            self._checkin(conn)

    # -- schema -------------------------------------------------------------------------

    def create_schema(self) -> None:
        if self.has_schema():  # the common case: known, or a cheap query (no lock, no DDL)
            return
        with self.writing() as conn:
            if self.dialect == "postgresql":
                # Concurrent CREATE TABLE from two workers would race on the catalog.
                conn.execute(sql.CREATE_LOCK)
            # Checked again under the lock: another worker may have just created it. The
            # tables are created in one transaction, so they exist all together or not at all.
            if schema.runs.name not in self._read_tables(conn):
                schema.metadata.create_all(conn, checkfirst=False)
                sql.INSERT_META.run(conn, {"key": "schema_version", "value": schema.SCHEMA_VERSION})
        self._schema_ready = True
        self._tables = frozenset(t.name for t in schema.metadata.sorted_tables)

    def _read_tables(self, conn: Connection) -> frozenset[str]:
        return frozenset(sql.TABLES[self.dialect].run(conn).scalars())

    def has_table(self, name: str) -> bool:
        """Whether the table exists; asked of the database until it does, then known."""
        if name in self._tables and self._pid == os.getpid():
            return True
        with self.reading() as conn:
            self._tables = self._read_tables(conn)
        return name in self._tables

    @contextmanager
    def writing(self) -> Iterator[Connection]:
        """One write transaction (on SQLite: BEGIN IMMEDIATE, so two writers queue
        instead of failing with SQLITE_BUSY when both try to upgrade a read lock)."""
        with self._connection(writer=True) as conn, conn.begin():
            yield conn

    @contextmanager
    def reading(self) -> Iterator[Connection]:
        """A connection for reads; never blocks on, nor blocks, a writer's lock (WAL). Its
        transaction ends as the block does."""
        with self._connection(writer=False) as conn:
            yield conn

    def has_schema(self) -> bool:
        if self._schema_ready and self._pid == os.getpid():
            return True
        self._schema_ready = self.has_table(schema.runs.name)
        return self._schema_ready

    # -- sessions -----------------------------------------------------------------------

    def ensure_session(self, session_id: str, agent_name: str) -> dict[str, Any]:
        """Create the session if it is new; return its state."""
        self.create_schema()
        with self.writing() as conn:
            state = sql.SESSION_STATE.run(conn, {"session_id": session_id}).scalar_one_or_none()
            if state is not None:
                return _load(state)
            now = time.time()
            sql.INSERT_SESSION.run(
                conn,
                {
                    "session_id": session_id,
                    "agent_name": agent_name,
                    "state": _dump({}),
                    "created_at": now,
                    "updated_at": now,
                },
            )
            return {}

    def read_session(self, session_id: str) -> dict[str, Any] | None:
        if not self.has_schema():
            return None
        with self.reading() as conn:
            row = sql.SESSION.run(conn, {"session_id": session_id}).one_or_none()
            if row is None:
                return None
            run_ids = sql.SESSION_RUN_IDS.run(conn, {"session_id": session_id}).scalars()
            return session_from_row(row, list(run_ids))

    def latest_run_start(self, session_id: str) -> float:
        """When the session's latest run started (its created_at), 0.0 when it has none."""
        if not self.has_schema():
            return 0.0
        with self.reading() as conn:
            found = conn.execute(sql.LATEST_RUN_START, {"session_id": session_id}).scalar()
        return float(found or 0.0)

    def session_history(self, session_id: str, *, before: float) -> list[Message]:
        """Messages of the session's COMPLETED runs that started before `before`, in order."""
        if not self.has_schema():
            return []
        params = {"session_id": session_id, "status": RunStatus.COMPLETED.value, "before": before}
        with self.reading() as conn:
            return [Message.from_json(b) for b in sql.HISTORY.run(conn, params).scalars()]

    # -- runs ---------------------------------------------------------------------------

    def read_run(self, run_id: str, *, whole: bool = True) -> StoredRun | None:
        """The run, whole: row, messages in order, tool executions in call order.
        With whole=False, the row only (messages and executions left empty)."""
        if not self.has_schema():
            return None
        with self.reading() as conn:
            return self._read_run(conn, run_id, whole=whole)

    def _read_run(self, conn: Connection, run_id: str, *, whole: bool = True) -> StoredRun | None:
        row = sql.RUN.run(conn, {"run_id": run_id}).one_or_none()
        if row is None:
            return None
        bodies: Any = ()
        execs: Any = ()
        if whole:
            bodies = sql.MESSAGES.run(conn, {"run_id": run_id}).scalars()
            execs = sql.EXECUTIONS.run(conn, {"run_id": run_id}).all()
        return run_from_rows(row, bodies, execs)

    def checkpoint_count(self, run_id: str) -> int | None:
        """How many checkpoints of the run have landed (None: no row). Cheap, for pollers."""
        if not self.has_schema():
            return None
        with self.reading() as conn:
            return sql.CHECKPOINTS.run(conn, {"run_id": run_id}).scalar_one_or_none()

    def claim(
        self, run_id: str, session_id: str, owner: Owner, *, lease_seconds: float
    ) -> StoredRun:
        """Take the run for `owner` (compare-and-swap on version) and truncate it to its
        last checkpoint. Raises without changing anything when the run cannot be taken."""
        self.create_schema()
        with self.writing() as conn:
            claimed = sql.RUN_FOR_UPDATE if self.dialect == "postgresql" else sql.RUN
            row = claimed.run(conn, {"run_id": run_id}).one_or_none()
            if row is None or row.session_id != session_id:
                where = "" if row is None else f" (it belongs to session {row.session_id!r})"
                raise RunNotFound(
                    f"runtime: no run {run_id!r} in session {session_id!r}{where}; "
                    "check the ids, or start a new run with arun()"
                )
            status = RunStatus(row.status)
            if status not in CONTINUABLE:
                raise RunNotContinuable(
                    f"runtime: run {run_id!r} is {status.value} and cannot be continued; "
                    "only RUNNING, ERROR and PAUSED runs continue; start a new run instead"
                )
            now = time.time()
            if (
                row.owner is not None
                and (row.lease_expires_at or 0) > now
                and holder_is_alive(row.owner_host, row.owner_pid, row.owner_started)
            ):
                raise RunOwnedElsewhere(
                    f"runtime: run {run_id!r} is driven by pid {row.owner_pid} on "
                    f"{row.owner_host!r} (lease for {row.lease_expires_at - now:.1f}s more); "
                    "wait for it to finish or for its lease to expire"
                )
            taken = sql.TAKE.run(
                conn,
                {
                    "run_id": run_id,
                    "version": row.version,
                    "new_version": row.version + 1,
                    "owner": owner.token,
                    "owner_host": owner.host,
                    "owner_pid": owner.pid,
                    "owner_started": owner.started,
                    "lease_expires_at": now + lease_seconds,
                    "updated_at": now,
                },
            ).rowcount
            if taken != 1:
                raise RunOwnedElsewhere(
                    f"runtime: run {run_id!r} was taken by another worker while this one "
                    "claimed it; retry later"
                )
            # Anything past the checkpoint is not acknowledged state: drop it.
            keep = row.last_checkpoint_at_message_index
            sql.DROP_MESSAGES_FROM.run(conn, {"run_id": run_id, "idx": keep})
            run = self._read_run(conn, run_id)
            assert run is not None
            turns = sum(1 for msg in run.messages if msg.role == "assistant")
            sql.DROP_EXECUTIONS_AFTER.run(conn, {"run_id": run_id, "turn": turns})
            run.tool_executions = [e for e in run.tool_executions if e.turn <= turns]
            return run

    def request_cancel(self, run_id: str, after: int) -> bool:
        """Record a cancel request on the run's row (an earlier one wins); False when the
        run has no row yet."""
        if not self.has_schema():
            return False
        with self.writing() as conn:
            params = {"run_id": run_id, "cancel_after": after}
            return sql.REQUEST_CANCEL.run(conn, params).rowcount == 1

    def lease_left(self, run_id: str, owner: Owner, version: int) -> float | None:
        """Seconds left on `owner`'s lease of the run at `version` (negative once lapsed);
        None when the run is no longer theirs at that version. A read: no lock taken."""
        params = {"run_id": run_id, "version": version, "owner": owner.token}
        with self.reading() as conn:
            row = sql.LEASE.run(conn, params).first()
        if row is None:
            return None
        return (row.lease_expires_at or 0.0) - time.time()

    def renew_lease(self, run_id: str, owner: Owner, version: int, lease_seconds: float) -> bool:
        """Extend the lease without a new version; False when the run was taken over."""
        params = {
            "run_id": run_id,
            "version": version,
            "owner": owner.token,
            "lease_expires_at": time.time() + lease_seconds,
        }
        with self.writing() as conn:
            return sql.RENEW_LEASE.run(conn, params).rowcount == 1

    def write_checkpoint(self, cp: Checkpoint) -> int:
        """One transaction: the run row (insert or compare-and-swap), the new messages, the new
        tool executions and the session state. Returns the run's new version."""
        self.create_schema()
        now = time.time()
        owned = cp.lease_expires_at is not None
        values: dict[str, Any] = {
            "run_id": cp.run_id,
            "status": cp.status.value,
            "content": _dump(cp.content) if cp.content is not None else None,
            "error": _dump(cp.error) if cp.error is not None else None,
            "usage": _dump(cp.usage.to_dict()),
            "pending_confirmations": _dump(cp.pending_confirmations),
            "last_checkpoint_at_message_index": cp.last_checkpoint_at_message_index,
            "checkpoints": cp.checkpoints,
            "owner": cp.owner.token if owned else None,
            "owner_host": cp.owner.host if owned else None,
            "owner_pid": cp.owner.pid if owned else None,
            "owner_started": cp.owner.started if owned else None,
            "lease_expires_at": cp.lease_expires_at,
            "updated_at": now,
        }
        with self.writing() as conn:
            if cp.expected_version is None:
                version = 1
                try:
                    sql.INSERT_RUN.run(
                        conn,
                        {
                            **values,
                            "session_id": cp.session_id,
                            "agent_name": cp.agent_name,
                            "mode": cp.mode,
                            "input": _dump(cp.input),
                            "version": version,
                            "created_at": cp.created_at,
                            "cancel_after": cp.cancel_after,
                        },
                    )
                except IntegrityError:
                    # The transaction rolls back as the error leaves `begin()`.
                    raise RunOwnedElsewhere(
                        f"runtime: run {cp.run_id!r} already exists in the store; another "
                        "worker wrote it. This worker's write was rejected"
                    ) from None
            else:
                version = cp.expected_version + 1
                cancel = cp.cancel_after is not None
                update = sql.UPDATE_RUN_CANCEL if cancel else sql.UPDATE_RUN
                written = update.run(
                    conn,
                    {
                        **values,
                        "version": version,
                        "expected_version": cp.expected_version,
                        "writer": cp.owner.token,
                        **({"cancel_after": cp.cancel_after} if cancel else {}),
                    },
                ).rowcount
                if written != 1:
                    raise RunOwnedElsewhere(
                        f"runtime: run {cp.run_id!r} was taken over by another worker; this "
                        f"worker's checkpoint {cp.checkpoints} was rejected (stale writer)"
                    )
            self.append_rows(conn, cp)
            sql.UPDATE_SESSION_STATE.run(
                conn,
                {"session_id": cp.session_id, "state": _dump(cp.session_state), "updated_at": now},
            )
        return version

    @staticmethod
    def append_rows(conn: Connection, cp: Checkpoint) -> None:
        """Insert the checkpoint's new message and tool-execution rows (append only)."""
        if cp.new_messages:
            sql.INSERT_MESSAGE.run(
                conn,
                [
                    {"run_id": cp.run_id, "idx": cp.first_new_index + i, "body": m.to_json()}
                    for i, m in enumerate(cp.new_messages)
                ],
            )
        if cp.new_tool_executions:
            sql.INSERT_EXECUTION.run(
                conn,
                [
                    {
                        "run_id": cp.run_id,
                        "call_id": e.call_id,
                        "turn": e.turn,
                        "call_index": e.call_index,
                        "name": e.name,
                        "arguments": _dump(e.arguments),
                        "result": _dump(e.result),
                        "status": e.status,
                        "idempotency_key": e.idempotency_key,
                    }
                    for e in cp.new_tool_executions
                ],
            )

    def count_rows(self) -> dict[str, int]:
        """Row counts per table (for tests and the crash inspector)."""
        if not self.has_schema():
            return {}
        with self.reading() as conn:
            return {
                t.name: conn.execute(select(func.count()).select_from(t)).scalar_one()
                for t in schema.metadata.sorted_tables
            }
