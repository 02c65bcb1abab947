# ruff: noqa: SIM300 - tests assert `expected == actual`
"""The store on SQLite and on PostgreSQL: schema, checkpoints, reads, claims."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import create_engine, inspect, text

from killpoint.runtime import (
    ConfigurationError,
    Message,
    RunNotContinuable,
    RunOwnedElsewhere,
    RunStatus,
    Store,
    ToolCall,
    ToolExecution,
    Usage,
)
from killpoint.runtime.store import Checkpoint, Owner, normalise_url, sql
from killpoint.runtime.store.schema import SCHEMA_VERSION
from tests.helpers import snapshot

TABLES = {"kp_meta", "kp_sessions", "kp_runs", "kp_run_messages", "kp_tool_executions"}


def conversation(batches: int) -> list[Message]:
    """user, then per batch an assistant call and its result."""
    msgs = [Message(role="user", content="go")]
    for n in range(1, batches + 1):
        msgs.append(
            Message(role="assistant", tool_calls=(ToolCall(f"c{n}", "step", f'{{"n": {n}}}'),))
        )
        msgs.append(
            Message(role="tool", content=f"r{n}", call_id=f"c{n}", name="step", status="ok")
        )
    return msgs


def execution(n: int, run_id: str = "r1") -> ToolExecution:
    return ToolExecution(
        call_id=f"c{n}",
        name="step",
        arguments=f'{{"n": {n}}}',
        result=f"r{n}",
        status="ok",
        turn=n,
        call_index=0,
        idempotency_key=f"{run_id}:{n}:0",
    )


def checkpoint(
    messages: list[Message],
    first_new: int,
    *,
    owner: Owner,
    version: int | None,
    status: RunStatus = RunStatus.RUNNING,
    executions: list[ToolExecution] | None = None,
    number: int = 1,
    last_index: int | None = None,
    run_id: str = "r1",
    **overrides: Any,
) -> Checkpoint:
    fields: dict[str, Any] = {
        "run_id": run_id,
        "session_id": "s1",
        "agent_name": "store-test",
        "mode": "tool-batch",
        "status": status,
        "input": "go",
        "content": None,
        "error": None,
        "usage": Usage(
            input_tokens=number, output_tokens=1, total_tokens=number + 1, model_calls=number
        ),
        "last_checkpoint_at_message_index": len(messages) if last_index is None else last_index,
        "checkpoints": number,
        "first_new_index": first_new,
        "new_messages": messages[first_new:],
        "new_tool_executions": executions or [],
        "pending_confirmations": [],
        "session_state": {"n": number},
        "owner": owner,
        "expected_version": version,
        "lease_expires_at": None if status.terminal else time.time() + 30,
        "created_at": 1000.0,
    }
    fields.update(overrides)
    return Checkpoint(**fields)


@pytest.mark.postgres
def test_stores_in_other_schemas_create_their_tables_without_waiting(
    pg_url: str, tmp_path: Path
) -> None:
    """The creation lock keeps two writers of one schema from racing on the catalog; a
    store in another schema of the same database (another killpoint cell) must not wait
    on it: with a short lock timeout it would fail before its run began."""
    from killpoint.stores.postgresql import PostgresStores

    stores = PostgresStores(pg_url)
    busy, other = stores.fresh(tmp_path), stores.fresh(tmp_path)
    holder = create_engine(busy)
    try:
        with holder.begin() as conn:
            conn.execute(sql.CREATE_LOCK)  # a worker creating the busy schema's tables
            Store(stores.with_lock_timeout(other, 0.2)).create_schema()
        assert TABLES <= set(stores.tables(other))
    finally:
        holder.dispose()
        stores.drop(busy)
        stores.drop(other)


def test_schema_is_created_on_first_use_with_a_version_row(store_url: str) -> None:
    """A fresh database has no kp_ tables; reading creates none; the first write creates
    all of them and one kp_meta row holding the schema version; a second Store does not
    add another."""
    probe = create_engine(normalise_url(store_url))
    try:
        assert set() == TABLES & set(inspect(probe).get_table_names())

        assert None is Store(store_url).read_run("anything")
        # Reads never write, not even the schema: a poller must not take locks.
        assert set() == TABLES & set(inspect(probe).get_table_names())

        Store(store_url).ensure_session("s", "agent")
        assert TABLES == TABLES & set(inspect(probe).get_table_names())
        Store(store_url).create_schema()
        with probe.connect() as conn:
            rows = conn.execute(text("SELECT key, value FROM kp_meta")).all()
        assert [("schema_version", SCHEMA_VERSION)] == [tuple(r) for r in rows]
    finally:
        probe.dispose()


def test_checkpoints_append_and_the_run_reads_back_whole(store_url: str) -> None:
    """Two checkpoints (an insert, then a compare-and-swap update) read back as one run: every
    message in order, every execution, the latest row fields, version 2."""
    store = Store(store_url)
    owner = Owner.current()
    store.ensure_session("s1", "store-test")
    msgs = conversation(2)

    v1 = store.write_checkpoint(
        checkpoint(msgs[:3], 0, owner=owner, version=None, executions=[execution(1)])
    )
    v2 = store.write_checkpoint(
        checkpoint(
            msgs,
            3,
            owner=owner,
            version=v1,
            executions=[execution(2)],
            number=2,
            status=RunStatus.COMPLETED,
            content="finished",
        )
    )

    run = Store(store_url).read_run("r1")
    assert run is not None
    assert (1, 2) == (v1, v2)
    assert msgs == run.messages
    assert [execution(1), execution(2)] == run.tool_executions
    assert (RunStatus.COMPLETED, "finished", 5, 2, 2, None) == (
        run.status,
        run.content,
        run.last_checkpoint_at_message_index,
        run.checkpoints,
        run.version,
        run.owner,
    )
    assert Usage(2, 1, 3, 2) == run.usage
    session = store.read_session("s1")
    assert session is not None
    assert ({"n": 2}, ["r1"]) == (session["state"], session["run_ids"])
    assert {"kp_run_messages": 5, "kp_tool_executions": 2, "kp_runs": 1} == {
        k: v
        for k, v in store.count_rows().items()
        if k in ("kp_run_messages", "kp_tool_executions", "kp_runs")
    }


def test_a_write_with_a_stale_version_is_rejected_and_changes_nothing(store_url: str) -> None:
    """A checkpoint that expects an old version (or carries another owner's token) raises
    RunOwnedElsewhere, and its transaction leaves no trace."""
    store = Store(store_url)
    owner = Owner.current()
    store.ensure_session("s1", "store-test")
    msgs = conversation(2)
    v1 = store.write_checkpoint(checkpoint(msgs[:3], 0, owner=owner, version=None))
    store.write_checkpoint(checkpoint(msgs[:5], 3, owner=owner, version=v1, number=2))
    before = snapshot(store_url)
    more = [*msgs, Message(role="assistant", content="late")]

    with pytest.raises(RunOwnedElsewhere, match="stale writer"):
        store.write_checkpoint(checkpoint(more, 5, owner=owner, version=v1, number=3))
    with pytest.raises(RunOwnedElsewhere, match="stale writer"):
        store.write_checkpoint(checkpoint(more, 5, owner=Owner.current(), version=2, number=3))

    assert before == snapshot(store_url)


def test_a_second_insert_of_a_run_is_rejected(store_url: str) -> None:
    """Two workers that both believe a run is new: the second insert raises
    RunOwnedElsewhere and writes nothing (no stray message rows)."""
    store = Store(store_url)
    store.ensure_session("s1", "store-test")
    msgs = conversation(1)
    store.write_checkpoint(checkpoint(msgs, 0, owner=Owner.current(), version=None))
    before = snapshot(store_url)

    with pytest.raises(RunOwnedElsewhere, match="already exists"):
        store.write_checkpoint(checkpoint(msgs, 0, owner=Owner.current(), version=None))

    assert before == snapshot(store_url)


def test_claim_truncates_to_the_last_checkpoint(store_url: str) -> None:
    """A claim drops messages past last_checkpoint_at_message_index and executions of later
    turns, takes the run (version + 1, new owner) and returns what is left."""
    store = Store(store_url)
    store.ensure_session("s1", "store-test")
    msgs = conversation(2)
    first = Owner.current()
    store.write_checkpoint(
        checkpoint(
            msgs,
            0,
            owner=first,
            version=None,
            executions=[execution(1), execution(2)],
            last_index=3,
            lease_expires_at=time.time() - 1,  # the first worker's lease ran out
        )
    )
    second = Owner.current()

    run = store.claim("r1", "s1", second, lease_seconds=30)

    assert msgs[:3] == run.messages
    assert [execution(1)] == run.tool_executions
    stored = Store(store_url).read_run("r1")
    assert stored is not None
    assert (msgs[:3], [execution(1)], 2, second.token) == (
        stored.messages,
        stored.tool_executions,
        stored.version,
        stored.owner,
    )


def test_claim_of_a_finished_run_is_refused(store_url: str) -> None:
    """claim() itself refuses COMPLETED runs, without writing."""
    store = Store(store_url)
    store.ensure_session("s1", "store-test")
    store.write_checkpoint(
        checkpoint(
            conversation(1), 0, owner=Owner.current(), version=None, status=RunStatus.COMPLETED
        )
    )
    before = snapshot(store_url)

    with pytest.raises(RunNotContinuable):
        store.claim("r1", "s1", Owner.current(), lease_seconds=30)

    assert before == snapshot(store_url)


def test_session_history_holds_completed_earlier_runs_only(store_url: str) -> None:
    """session_history() returns the messages of COMPLETED runs created before the given
    time, in creation order; RUNNING and later runs are left out."""
    store = Store(store_url)
    store.ensure_session("s1", "store-test")
    owner = Owner.current()
    a = [Message(role="user", content="a"), Message(role="assistant", content="A")]
    b = [Message(role="user", content="b"), Message(role="assistant", content="B")]
    c = [Message(role="user", content="c")]
    store.write_checkpoint(
        checkpoint(
            b,
            0,
            owner=owner,
            version=None,
            run_id="rb",
            status=RunStatus.COMPLETED,
            created_at=20.0,
        )
    )
    store.write_checkpoint(
        checkpoint(
            a,
            0,
            owner=owner,
            version=None,
            run_id="ra",
            status=RunStatus.COMPLETED,
            created_at=10.0,
        )
    )
    store.write_checkpoint(
        checkpoint(c, 0, owner=owner, version=None, run_id="rc", created_at=15.0)
    )
    store.write_checkpoint(
        checkpoint(
            c,
            0,
            owner=owner,
            version=None,
            run_id="rd",
            status=RunStatus.COMPLETED,
            created_at=99.0,
        )
    )

    assert a + b == store.session_history("s1", before=50.0)
    assert a == store.session_history("s1", before=20.0)


def test_checkpoint_count_is_none_without_a_row(store_url: str) -> None:
    """checkpoint_count() is None for an unknown run and the latest count otherwise."""
    store = Store(store_url)
    store.ensure_session("s1", "store-test")

    assert None is store.checkpoint_count("r1")
    store.write_checkpoint(
        checkpoint(conversation(1), 0, owner=Owner.current(), version=None, number=7)
    )
    assert 7 == store.checkpoint_count("r1")


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("runs.db", "sqlite:///runs.db"),
        ("/tmp/x/runs.db", "sqlite:////tmp/x/runs.db"),
        ("sqlite:///a.db", "sqlite:///a.db"),
        ("postgresql://u:p@h:5/d", "postgresql+psycopg://u:p@h:5/d"),
        ("postgresql+psycopg://u@h/d", "postgresql+psycopg://u@h/d"),
    ],
)
def test_store_urls_are_normalised(url: str, expected: str) -> None:
    """Paths become SQLite URLs; any PostgreSQL URL gets the psycopg 3 driver."""
    assert expected == normalise_url(url)


@pytest.mark.parametrize(
    ("url", "match"),
    [
        ("", "not a file"),
        (":memory:", "not a file"),
        ("sqlite://", "names no file"),
        ("sqlite:///:memory:", "names no file"),
        ("mysql://u@h/d", "supported"),
    ],
)
def test_unusable_store_urls_are_refused(url: str, match: str) -> None:
    """In-memory SQLite (it would not outlive a crash) and other backends are refused."""
    with pytest.raises(ConfigurationError, match=match):
        Store(url)


def test_sqlite_store_uses_wal(tmp_path: Path) -> None:
    """The SQLite store runs in WAL mode (readers do not block the writer)."""
    store = Store(f"sqlite:///{tmp_path / 'wal.db'}")
    store.create_schema()

    with store.engine.connect() as conn:
        mode = conn.exec_driver_sql("PRAGMA journal_mode").scalar_one()

    assert "wal" == mode


def test_a_resumers_work_takes_one_connection_and_one_look_at_the_catalog(
    tmp_path: Path,
) -> None:
    """What a resumed worker does with its store (claim, session, history, the reply
    journal, checkpoints, lease reads and renewals, reads of the run) opens one SQLite
    connection and asks the catalog once: the schema, once seen, is known, and the
    connection is kept between uses instead of checked out of the pool each time."""
    from sqlalchemy import event

    from killpoint.runtime.store.replies import ReplyJournal

    url = f"sqlite:///{tmp_path / 'resume.db'}"
    first = Store(url)
    first.ensure_session("s1", "store-test")
    msgs = conversation(2)
    owner = Owner.current()
    first.write_checkpoint(
        checkpoint(
            msgs[:3],
            0,
            owner=owner,
            version=None,
            executions=[execution(1)],
            lease_expires_at=time.time() - 1,  # the crashed worker's lease ran out
        )
    )
    first.dispose()

    store = Store(url)  # the resumer's: a process of its own has a store of its own
    journal = ReplyJournal(store)
    connects: list[object] = []
    checkouts: list[object] = []
    catalog: list[str] = []
    event.listen(store.engine, "connect", lambda *a: connects.append(a))
    event.listen(store.engine, "checkout", lambda *a: checkouts.append(a))
    event.listen(
        store.engine,
        "before_cursor_execute",
        lambda conn, cursor, statement, *a: (
            catalog.append(statement) if "sqlite_master" in statement else None
        ),
    )

    before = store.read_run("r1", whole=False)
    assert before is not None
    run = store.claim("r1", "s1", owner, lease_seconds=30)
    store.read_session("s1")
    store.session_history("s1", before=2000.0)
    journal.read("r1", len(run.messages))
    journal.save("r1", 3, msgs[3], Usage())
    version = store.write_checkpoint(
        checkpoint(msgs, 3, owner=owner, version=run.version, executions=[execution(2)], number=2)
    )
    assert store.lease_left("r1", owner, version) is not None
    assert store.renew_lease("r1", owner, version, 30)
    assert store.read_run("r1") is not None

    assert (1, 1, 1) == (len(connects), len(checkouts), len(catalog)), catalog
