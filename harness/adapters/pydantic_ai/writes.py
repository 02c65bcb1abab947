"""DBOS's durable writes, gated and counted (workers only).

DBOS keeps a run (a workflow) in its system database, and three of its writes change what
a recovery finds, so each is one checkpoint to killpoint:

- `init_workflow`: the workflow's status row (PENDING, its inputs); written when a run
  starts and again when a recovery claims the workflow;
- `record_operation_result`: a step's output (or error) in `operation_outputs`: a model
  request, a tool call, once each: what a recovery returns instead of running the step;
- `update_workflow_outcome`: the terminal status (SUCCESS or ERROR) and the output. It
  returns False when the write did not land (the row was cancelled or claimed by another
  execution meanwhile).

A write that changed nothing (that outcome, or a start under an id that already exists)
passes no `landed` gate and adds no counter row.

Each runs in one SQLAlchemy transaction (`engine.begin()`, IMMEDIATE on SQLite); the
counter row (`killpoint_checkpoints`) joins that transaction right after the write's
first statement that changed a row, so `progress()` counts exactly the writes that
committed. The `committing` gate comes from SQLAlchemy's commit event, in the thread that
writes (DBOS records an async step's output from a worker thread: the checkpoint is opened
there, so the gate sees it).

On PostgreSQL DBOS writes the terminal outcome in one statement in autocommit (an UPDATE
and the output's upsert as CTEs, `_sys_db.py`, `update_workflow_outcome`): no transaction
for a counter row to join, and no commit for a `committing` gate. There the outcome is
counted by what it wrote (a SUCCESS or ERROR status, reading.py), which lands or not with
that one statement, and it has `writing` and `landed` gates only (so no mid-commit point).
"""

from __future__ import annotations

import contextvars
import functools
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from killpoint.adapters.checkpoint_gates import CheckpointGates

COUNTER_TABLE = "killpoint_checkpoints"
CREATE_COUNTER = (
    f"CREATE TABLE IF NOT EXISTS {COUNTER_TABLE} "
    "(n INTEGER NOT NULL, workflow_id TEXT NOT NULL, kind TEXT NOT NULL)"
)
INSERT_COUNTER = f"INSERT INTO {COUNTER_TABLE} (n, workflow_id, kind) VALUES (?, ?, ?)"
INSERT_COUNTER_PG = INSERT_COUNTER.replace("?", "%s")
# The statement of each write that makes it: the counter row follows it. Matched by its
# head (SQLAlchemy renders `main.` before SQLite's tables).
LANDING = {
    # A start under an id that exists (a woken stale worker starting the session's next
    # run, which another worker already ran) changes nothing: DBOS's status INSERT then
    # returns the existing row through a no-op ON CONFLICT update, and the inputs' INSERT
    # (ON CONFLICT DO NOTHING) adds no row. That INSERT is the write's landing.
    "status": ("insert into", "workflow_input"),
    "step": ("insert into", "operation_outputs"),
    "outcome": ("update", "workflow_status set status="),
}


@dataclass
class _Write:
    n: int
    workflow_id: str
    kind: str
    counted: bool = False


_writing: contextvars.ContextVar[_Write | None] = contextvars.ContextVar(
    "killpoint_dbos_write", default=None
)
# One write at a time in a process, numbered in the order it lands: the steps of a batch's
# concurrent calls record their outputs from threads of their own, and a number given to
# a write that then waits for another's SQLite lock would make the numbers and the order
# of landing disagree. SQLite serialises DBOS's writers anyway (IMMEDIATE transactions);
# this only moves the wait before the `writing` gate.
_one_write = threading.Lock()


def _workflow_of_status(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    status = args[0] if args else kwargs["status"]
    return str(status["workflow_uuid"])


def _workflow_of_result(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    result = args[0] if args else kwargs["result"]
    return str(result["workflow_uuid"])


def _workflow_of_outcome(args: tuple[Any, ...], kwargs: dict[str, Any]) -> str:
    return str(args[0] if args else kwargs["workflow_id"])


WRITES: dict[str, tuple[str, Callable[[tuple[Any, ...], dict[str, Any]], str]]] = {
    "init_workflow": ("status", _workflow_of_status),
    "record_operation_result": ("step", _workflow_of_result),
    "update_workflow_outcome": ("outcome", _workflow_of_outcome),
}


def instrument(checkpoints: CheckpointGates) -> None:
    """Gate and count DBOS's durable writes of a run in this process."""
    from dbos._sys_db import SystemDatabase
    from sqlalchemy import Engine, event

    for method, (kind, workflow_of) in WRITES.items():
        original = getattr(SystemDatabase, method)
        setattr(SystemDatabase, method, _gated(original, kind, workflow_of, checkpoints))
    checkpoints.watch_sqlalchemy()
    event.listen(Engine, "after_cursor_execute", _count)


def _gated(
    fn: Callable[..., Any],
    kind: str,
    workflow_of: Callable[[tuple[Any, ...], dict[str, Any]], str],
    checkpoints: CheckpointGates,
) -> Callable[..., Any]:
    @functools.wraps(fn)
    def gated(self: Any, *args: Any, **kwargs: Any) -> Any:
        if _writing.get() is not None:  # a write inside a write: the outer one counts
            return fn(self, *args, **kwargs)
        with _one_write:
            n = checkpoints.begin()
            landed = False
            write = _Write(n, workflow_of(args, kwargs), kind)
            token = _writing.set(write)
            try:
                out = fn(self, *args, **kwargs)
                # Landed when its counter row joined the transaction, which then committed:
                # a write that changed nothing (see LANDING) passes no `landed` gate. DBOS's
                # outcome says itself whether it landed (on PostgreSQL it has no counter row).
                landed = bool(out) if kind == "outcome" else write.counted
                return out
            finally:
                _writing.reset(token)
                checkpoints.end(n, landed=landed)

    return gated


def _count(conn: Any, cursor: Any, statement: str, *_: Any) -> None:
    """After the statement that makes an open write, in its transaction: the write's
    counter row (once per write). DBOS's other statements inside a write (the ownership
    fence, the inputs' and output's rows) are not it."""
    write = _writing.get()
    if write is None or write.counted:
        return
    verb, table = LANDING[write.kind]
    head = " ".join(statement.split())[:120].lower().replace("main.", "")
    if not head.startswith(verb) or table not in head:
        return
    # A terminal UPDATE that matched no row (the workflow was cancelled or claimed by
    # another execution) lands nothing: DBOS then writes no output and returns False; an
    # inputs' INSERT that met an existing row adds nothing. A step's INSERT either lands or
    # raises, which rolls the counter row back with it (it has a RETURNING clause, so its
    # rowcount is not known here).
    if write.kind != "step" and cursor.rowcount == 0:
        return
    write.counted = True
    raw = cursor.connection.cursor()
    try:
        if conn.dialect.name == "postgresql":
            # The table is in the cell's schema, which the URL's search_path selects.
            raw.execute(INSERT_COUNTER_PG, (write.n, write.workflow_id, write.kind))
        else:
            raw.execute(CREATE_COUNTER)
            raw.execute(INSERT_COUNTER, (write.n, write.workflow_id, write.kind))
    finally:
        raw.close()


def create_counter(system_url: str) -> None:
    """killpoint's counter table in the system database (before DBOS writes anything)."""
    from sqlalchemy import create_engine, inspect, text
    from sqlalchemy.pool import NullPool

    from killpoint.adapters.pydantic_ai.system_db import system_schema

    schema = system_schema(system_url)
    # A recovery's process finds the table there: it only reads (another process may hold
    # the write lock), and a write waits as long as DBOS's own do (busy_timeout=30000).
    engine = create_engine(
        system_url,
        poolclass=NullPool,
        connect_args={} if schema is not None else {"timeout": 30},
    )
    try:
        if COUNTER_TABLE in inspect(engine).get_table_names(schema=schema):
            return
        with engine.begin() as conn:
            if schema is not None:
                conn.execute(text(f'CREATE SCHEMA IF NOT EXISTS "{schema}"'))
            conn.execute(text(CREATE_COUNTER))
    finally:
        engine.dispose()
