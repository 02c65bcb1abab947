"""LangGraph's savers on a killpoint store, and the gates around their durable writes.

A killpoint store URL is `sqlite:///path[?timeout=S]` or
`postgresql+psycopg://user@host:port/db?options=-csearch_path=<schema>`; LangGraph's own
savers take it as an aiosqlite connection (`AsyncSqliteSaver`) or a psycopg conninfo
(`AsyncPostgresSaver`).

LangGraph makes two kinds of durable write, and both are checkpoints to killpoint: `aput`
(a checkpoint: the state after a superstep) and `aput_writes` (a task's pending writes:
its results, kept until the superstep's checkpoint lands, so that a resume does not run
the task again). `instrument()` (workers only) wraps both in the engine's gates, numbers
them in the order they reach the store (they are serialised per saver; the savers hold
a lock over their one connection anyway), and adds one row to `killpoint_checkpoints` in
the same transaction as the write, so `progress()` counts exactly the writes that landed.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
from collections.abc import AsyncIterator, Callable
from typing import Any

from sqlalchemy.engine import make_url

from killpoint.adapters.checkpoint_gates import CheckpointGates
from killpoint.stores.postgresql import conninfo, is_postgres

COUNTER_TABLE = "killpoint_checkpoints"
CREATE_COUNTER = (
    f"CREATE TABLE IF NOT EXISTS {COUNTER_TABLE} (n INTEGER NOT NULL, thread_id TEXT NOT NULL, "
    "kind TEXT NOT NULL, checkpoint_id TEXT, task_id TEXT)"
)


def sqlite_path(store_url: str) -> tuple[str, float | None]:
    """The file of a SQLite store URL and the lock timeout its query asks for."""
    url = make_url(store_url)
    timeout = url.query.get("timeout")
    return url.database or "", float(str(timeout)) if timeout is not None else None


@contextlib.asynccontextmanager
async def open_saver(store_url: str) -> AsyncIterator[Any]:
    """LangGraph's async saver over the store, on one connection of its own."""
    if is_postgres(store_url):
        from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

        async with AsyncPostgresSaver.from_conn_string(conninfo(store_url)) as saver:
            yield saver
        return
    import aiosqlite
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    path, timeout = sqlite_path(store_url)
    connect = aiosqlite.connect(path, timeout=timeout) if timeout else aiosqlite.connect(path)
    async with connect as conn:
        yield AsyncSqliteSaver(conn)


async def setup(saver: Any) -> None:
    """`saver.setup()`, LangGraph's migrations, without the connection's lock timeout.

    The PostgreSQL saver creates its indexes CONCURRENTLY, which waits for every older
    transaction of the database, other cells' included: a store URL with a lock timeout
    (killpoint's lock-held point, meant for the checkpoint writes) would make the setup
    give up instead. RESET brings back the timeout the connection was opened with."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    if not isinstance(saver, AsyncPostgresSaver):
        await saver.setup()
        return
    conn: Any = saver.conn  # one connection (open_saver), never a pool
    await conn.execute("SET lock_timeout = 0")
    try:
        await saver.setup()
    finally:
        await conn.execute("RESET lock_timeout")


# -- instrumentation --------------------------------------------------------------------------

# The write being made in this task: (thread id, kind, checkpoint id, task id).
_writing: contextvars.ContextVar[tuple[str, str, str, str | None] | None] = contextvars.ContextVar(
    "killpoint_langgraph_write", default=None
)


def instrument(checkpoints: CheckpointGates) -> None:
    """Gate and count every durable write of LangGraph's async savers in this process."""
    import aiosqlite
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    for cls in (AsyncSqliteSaver, AsyncPostgresSaver):
        cls.aput = _gated(cls.aput, "checkpoint", checkpoints)  # type: ignore[method-assign]
        cls.aput_writes = _gated(cls.aput_writes, "writes", checkpoints)  # type: ignore[method-assign]
    aiosqlite.Connection.commit = _counting_commit(aiosqlite.Connection.commit, checkpoints)  # type: ignore[method-assign]
    AsyncPostgresSaver._cursor = _counting_cursor(AsyncPostgresSaver._cursor, checkpoints)  # type: ignore[method-assign]


def _identify(kind: str, config: Any, args: tuple[Any, ...]) -> tuple[str, str, str, str | None]:
    conf = config["configurable"]
    if kind == "checkpoint":
        return str(conf["thread_id"]), kind, str(args[0]["id"]), None
    return str(conf["thread_id"]), kind, str(conf["checkpoint_id"]), str(args[1])


def _gated(fn: Callable[..., Any], kind: str, checkpoints: CheckpointGates) -> Callable[..., Any]:
    """`aput` or `aput_writes` as one numbered checkpoint, serialised per saver: a number
    is given when the write begins, so two writes in flight at once would make the
    numbers and the order of landing disagree (and a COMMIT on aiosqlite's thread would
    belong to neither)."""

    @functools.wraps(fn)
    async def gated(self: Any, config: Any, *args: Any, **kwargs: Any) -> Any:
        lock = self.__dict__.setdefault("_killpoint_lock", asyncio.Lock())
        async with lock:
            await _prepare(self, checkpoints)
            token = _writing.set(_identify(kind, config, args))
            try:
                async with checkpoints.awrite():
                    return await fn(self, config, *args, **kwargs)
            finally:
                _writing.reset(token)

    return gated


async def _prepare(saver: Any, checkpoints: CheckpointGates) -> None:
    """Once per saver, before its first write: the counter table, and (SQLite) the commit
    hook on its connection. Outside any checkpoint: nothing here is counted."""
    if saver.__dict__.get("_killpoint_ready"):
        return
    from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver

    if isinstance(saver, AsyncSqliteSaver):
        async with saver.lock:
            await saver.conn.execute(CREATE_COUNTER)
            await saver.conn.commit()
        await checkpoints.watch_aiosqlite(saver.conn)
    else:
        async with saver._cursor() as cur:
            await cur.execute(CREATE_COUNTER)
    saver._killpoint_ready = True


def _counter_row(checkpoints: CheckpointGates) -> tuple[int, str, str, str, str | None] | None:
    write = _writing.get()
    n = checkpoints.current()
    if write is None or n is None:
        return None
    return (n, *write)


INSERT_COUNTER = (
    f"INSERT INTO {COUNTER_TABLE} (n, thread_id, kind, checkpoint_id, task_id) VALUES "
    "({0}, {0}, {0}, {0}, {0})"
)


def _counting_commit(
    commit: Callable[..., Any], checkpoints: CheckpointGates
) -> Callable[..., Any]:
    """aiosqlite's commit: inside a checkpoint, the counter row joins the transaction
    first (the COMMIT itself hits `committing`, through watch_aiosqlite)."""

    @functools.wraps(commit)
    async def counted(self: Any) -> None:
        row = _counter_row(checkpoints)
        if row is not None:
            await self.execute(INSERT_COUNTER.format("?"), row)
        await commit(self)

    return counted


def _counting_cursor(
    cursor: Callable[..., Any], checkpoints: CheckpointGates
) -> Callable[..., Any]:
    """AsyncPostgresSaver's cursor: a write's statements run in one pipeline on an
    autocommit connection, which PostgreSQL runs as one implicit transaction, committed at
    the pipeline's Sync when the block exits. Inside a checkpoint, the counter row is the
    block's last statement, and `committing` is hit just before the Sync (psycopg has no
    commit event: this is the last place inside the transaction)."""

    @contextlib.asynccontextmanager
    async def counted(self: Any, *, pipeline: bool = False) -> AsyncIterator[Any]:
        async with cursor(self, pipeline=pipeline) as cur:
            yield cur
            row = _counter_row(checkpoints) if pipeline else None
            if row is not None:
                await cur.execute(INSERT_COUNTER.format("%s"), row)
                checkpoints.committing()

    return counted
