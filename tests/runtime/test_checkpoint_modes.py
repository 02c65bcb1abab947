# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Checkpoint modes, observed from the store: what lands when, and that a checkpoint
writes only what is new since the previous one."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Any

import pytest
import respx
from sqlalchemy import text

from killpoint.runtime import Agent, RunStatus, Store
from killpoint.runtime.store import Checkpoint
from tests.helpers import batch_replies, make_model


@dataclass(frozen=True)
class Write:
    status: RunStatus
    checkpoints: int
    last_index: int
    new_messages: int
    new_calls: tuple[str, ...]
    rows_before: dict[str, int]
    rows_after: dict[str, int]


class ObservedStore(Store):
    """The real store; each checkpoint is recorded with the row counts around it."""

    def __init__(self, url: str) -> None:
        super().__init__(url)
        self.writes: list[Write] = []

    def write_checkpoint(self, cp: Checkpoint) -> int:
        before = self.count_rows()
        version = super().write_checkpoint(cp)
        self.writes.append(
            Write(
                status=cp.status,
                checkpoints=cp.checkpoints,
                last_index=cp.last_checkpoint_at_message_index,
                new_messages=len(cp.new_messages),
                new_calls=tuple(e.call_id for e in cp.new_tool_executions),
                rows_before=before,
                rows_after=self.count_rows(),
            )
        )
        return version


@dataclass
class Observation:
    batch: int
    call: int
    run: Any  # StoredRun | None, read by a separate Store (another engine) mid-run
    rows: dict[str, int]
    session_exists: bool


def observing_agent(url: str, mode: str, seen: list[Observation]) -> tuple[Agent, ObservedStore]:
    """An agent whose `step` tool looks at the store (through its own engine) as it runs."""
    observer = Store(url)

    def step(n: int, i: int, run_id: str) -> str:
        """Do step i of batch n, and note what the store holds right now."""
        seen.append(
            Observation(
                batch=n,
                call=i,
                run=observer.read_run(run_id),
                rows=observer.count_rows(),
                session_exists=observer.read_session("s-modes") is not None,
            )
        )
        return f"step {n}.{i}"

    store = ObservedStore(url)
    return Agent("modes", make_model(), store, tools=[step], checkpoint=mode), store


def test_runs_mode_writes_no_run_row_before_the_terminal_write(
    openai_mock: respx.MockRouter, store_url: str
) -> None:
    """ "runs": while the run is going, the session row exists and the run row does not; the
    only write is the terminal one."""
    openai_mock.post("/responses").mock(side_effect=batch_replies(3, 2))
    seen: list[Observation] = []
    agent, store = observing_agent(store_url, "runs", seen)

    out = agent.run("go", session_id="s-modes")

    assert RunStatus.COMPLETED == out.status
    assert 6 == len(seen)
    assert [None] * 6 == [o.run for o in seen]
    assert [0] * 6 == [o.rows["kp_runs"] + o.rows["kp_run_messages"] for o in seen]
    assert [True] * 6 == [o.session_exists for o in seen]
    assert [(RunStatus.COMPLETED, 1, 11, 11)] == [
        (w.status, w.checkpoints, w.last_index, w.new_messages) for w in store.writes
    ]


def test_tool_batch_mode_writes_running_after_each_batch(
    openai_mock: respx.MockRouter, store_url: str
) -> None:
    """ "tool-batch": after batch J the store holds the run as RUNNING with checkpoint J and
    every message through batch J (last_checkpoint_at_message_index = 1 + 3J for batches of
    two calls), as seen from the tools of batch J+1."""
    openai_mock.post("/responses").mock(side_effect=batch_replies(3, 2))
    seen: list[Observation] = []
    agent, store = observing_agent(store_url, "tool-batch", seen)

    out = agent.run("go", session_id="s-modes")

    assert RunStatus.COMPLETED == out.status
    first_calls = [o for o in seen if o.call == 0]
    assert [1, 2, 3] == [o.batch for o in first_calls]
    assert None is first_calls[0].run
    for o in first_calls[1:]:
        j = o.batch - 1
        assert (RunStatus.RUNNING, j, 1 + 3 * j, 1 + 3 * j, 2 * j) == (
            o.run.status,
            o.run.checkpoints,
            o.run.last_checkpoint_at_message_index,
            len(o.run.messages),
            len(o.run.tool_executions),
        )
    assert [
        (RunStatus.RUNNING, 1, 4),
        (RunStatus.RUNNING, 2, 7),
        (RunStatus.RUNNING, 3, 10),
        (RunStatus.COMPLETED, 4, 11),
    ] == [(w.status, w.checkpoints, w.last_index) for w in store.writes]
    assert 4 == out.checkpoints


def test_tool_mode_writes_after_each_tool_result(
    openai_mock: respx.MockRouter, store_url: str
) -> None:
    """ "tool": every tool result is its own checkpoint (one new execution row each), then the
    batch's barrier writes the result messages; 2 batches of 2 calls make 7 writes."""
    openai_mock.post("/responses").mock(side_effect=batch_replies(2, 2))
    seen: list[Observation] = []
    agent, store = observing_agent(store_url, "tool", seen)

    out = agent.run("go", session_id="s-modes")

    assert RunStatus.COMPLETED == out.status
    assert [RunStatus.RUNNING] * 6 + [RunStatus.COMPLETED] == [w.status for w in store.writes]
    assert [1, 1, 0, 1, 1, 0, 0] == [len(w.new_calls) for w in store.writes]
    assert {"call_1_0", "call_1_1"} == set(store.writes[0].new_calls + store.writes[1].new_calls)
    assert {"call_2_0", "call_2_1"} == set(store.writes[3].new_calls + store.writes[4].new_calls)
    assert [2, 0, 2, 1, 0, 2, 1] == [w.new_messages for w in store.writes]
    assert [1, 2, 3, 4, 5, 6, 7] == [w.checkpoints for w in store.writes]
    # Batch 2's tools saw batch 1 whole (3 writes) and at most their sibling's result.
    batch2 = [o for o in seen if o.batch == 2]
    assert [True, True] == [o.run.checkpoints in (3, 4) for o in batch2]
    assert [True, True] == [o.rows["kp_tool_executions"] in (2, 3) for o in batch2]


_AUDIT = {
    "sqlite": [
        "CREATE TABLE kp_test_audit (op TEXT, run_id TEXT, idx INTEGER)",
        "CREATE TRIGGER kp_test_ins AFTER INSERT ON kp_run_messages "
        "BEGIN INSERT INTO kp_test_audit VALUES ('I', NEW.run_id, NEW.idx); END",
        "CREATE TRIGGER kp_test_upd AFTER UPDATE ON kp_run_messages "
        "BEGIN INSERT INTO kp_test_audit VALUES ('U', NEW.run_id, NEW.idx); END",
        "CREATE TRIGGER kp_test_del AFTER DELETE ON kp_run_messages "
        "BEGIN INSERT INTO kp_test_audit VALUES ('D', OLD.run_id, OLD.idx); END",
    ],
    "postgresql": [
        "CREATE TABLE kp_test_audit (op TEXT, run_id TEXT, idx INTEGER)",
        """CREATE FUNCTION kp_test_audit_fn() RETURNS trigger AS $$
        BEGIN
            IF TG_OP = 'DELETE' THEN
                INSERT INTO kp_test_audit VALUES ('D', OLD.run_id, OLD.idx);
            ELSE
                INSERT INTO kp_test_audit VALUES (left(TG_OP, 1), NEW.run_id, NEW.idx);
            END IF;
            RETURN NULL;
        END $$ LANGUAGE plpgsql""",
        "CREATE TRIGGER kp_test_audit_trg AFTER INSERT OR UPDATE OR DELETE ON kp_run_messages "
        "FOR EACH ROW EXECUTE FUNCTION kp_test_audit_fn()",
    ],
}


@pytest.mark.parametrize("mode", ["tool-batch", "tool"])
def test_a_checkpoint_writes_only_new_message_rows(
    openai_mock: respx.MockRouter, store_url: str, mode: str
) -> None:
    """Each checkpoint adds exactly its new messages (row counts before/after) and never
    rewrites old ones: a database trigger sees one INSERT per message and no UPDATE or DELETE
    of a message row, over the whole run."""
    openai_mock.post("/responses").mock(side_effect=batch_replies(4, 2))
    seen: list[Observation] = []
    agent, store = observing_agent(store_url, mode, seen)
    store.create_schema()
    with store.engine.begin() as conn:
        for statement in _AUDIT[store.dialect]:
            conn.execute(text(statement))

    out = agent.run("go", session_id="s-modes")

    assert RunStatus.COMPLETED == out.status
    for w in store.writes:
        grew = {t: w.rows_after[t] - w.rows_before[t] for t in w.rows_before}
        assert (w.new_messages, len(w.new_calls)) == (
            grew["kp_run_messages"],
            grew["kp_tool_executions"],
        )
    with store.engine.connect() as conn:
        audit = conn.execute(text("SELECT op, run_id, idx FROM kp_test_audit")).all()
    assert [("I", out.run_id, i) for i in range(len(out.messages))] == sorted(
        (op, run_id, idx) for op, run_id, idx in audit
    )
    assert sum(w.new_messages for w in store.writes) == len(out.messages)


def test_tool_mode_checkpoints_no_state_update_without_its_result(
    openai_mock: respx.MockRouter, store_url: str
) -> None:
    """ "tool": two calls of one batch update the session state. Each checkpoint holds the
    updates of exactly the calls whose results it makes durable: the second call starts
    only after the first one's checkpoint (else a crash right after that checkpoint would
    resume with the second update applied, rerun the second call, and apply it again).
    Call 1 waits, boundedly, for call 0's checkpoint; call 0 for call 1's update, which
    comes first whenever the two run at once."""
    openai_mock.post("/responses").mock(side_effect=batch_replies(1, 2))
    updated, first_landed = threading.Event(), threading.Event()
    held: list[tuple[int, int]] = []  # per checkpoint: (state count, durable calls)

    class StateStore(Store):
        def write_checkpoint(self, cp: Checkpoint) -> int:
            version = super().write_checkpoint(cp)
            durable = len(self.read_run(cp.run_id).tool_executions)  # type: ignore[union-attr]
            held.append((cp.session_state.get("count", 0), durable))
            if durable:
                first_landed.set()
            return version

    def step(n: int, i: int, session_state: dict[str, Any]) -> str:
        """Do step i of batch n, counting it in the session."""
        if i == 0:
            updated.wait(1.0)
        session_state["count"] = session_state.get("count", 0) + 1
        if i == 1:
            updated.set()
            first_landed.wait(5.0)
        return f"step {n}.{i}"

    agent = Agent("modes", make_model(), StateStore(store_url), tools=[step], checkpoint="tool")
    out = agent.run("go", session_id="s-state")

    assert RunStatus.COMPLETED == out.status
    assert [(1, 1), (2, 2), (2, 2), (2, 2)] == held
