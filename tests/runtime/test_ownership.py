# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Ownership: one worker drives a run at a time (lease + version compare-and-swap); a second
resumer is refused; a stale writer's writes are rejected."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import httpx
import psutil
import pytest
import respx
from sqlalchemy import select

from killpoint.runtime import (
    Agent,
    Message,
    RunOwnedElsewhere,
    RunStatus,
    Store,
    ToolCall,
    Usage,
)
from killpoint.runtime.store import Checkpoint, Owner, schema
from tests.helpers import (
    batch_replies,
    crash_after_checkpoint,
    executed_keys,
    kill_tree,
    make_model,
    project,
    snapshot,
    worker,
    worker_args,
)
from tests.runtime.worker import reference_run

SESSION = "s-owners"

# -- in-process: the store's claim and compare-and-swap --------------------------------------


def running_checkpoint(owner: Owner, *, lease_expires_at: float, run_id: str = "r1") -> Checkpoint:
    """Checkpoint 1 of a RUNNING run held by `owner` until `lease_expires_at`."""
    messages = [
        Message(role="user", content="go"),
        Message(role="assistant", tool_calls=(ToolCall("c1", "step", "{}"),)),
        Message(role="tool", content="ok", call_id="c1", name="step", status="ok"),
    ]
    return Checkpoint(
        run_id=run_id,
        session_id="s1",
        agent_name="owners",
        mode="tool-batch",
        status=RunStatus.RUNNING,
        input="go",
        content=None,
        error=None,
        usage=Usage(),
        last_checkpoint_at_message_index=3,
        checkpoints=1,
        first_new_index=0,
        new_messages=messages,
        new_tool_executions=[],
        pending_confirmations=[],
        session_state={},
        owner=owner,
        expected_version=None,
        lease_expires_at=lease_expires_at,
        created_at=time.time(),
    )


def next_checkpoint(owner: Owner, version: int) -> Checkpoint:
    """The holder's checkpoint 2: one more message, expecting `version`."""
    cp = running_checkpoint(owner, lease_expires_at=time.time() + 30)
    cp.first_new_index = 3
    cp.new_messages = [Message(role="assistant", content="late")]
    cp.last_checkpoint_at_message_index = 4
    cp.checkpoints = 2
    cp.expected_version = version
    return cp


def stored_run_row(url: str, run_id: str) -> Any:
    store = Store(url)
    try:
        with store.reading() as conn:
            return conn.execute(
                select(schema.runs).where(schema.runs.c.run_id == run_id)
            ).one_or_none()
    finally:
        store.dispose()


def test_a_live_lease_of_a_live_holder_refuses_a_second_claim(store_url: str) -> None:
    """While the holder is alive and its lease runs, claim() raises RunOwnedElsewhere naming
    the holder's pid, and writes nothing."""
    store = Store(store_url)
    store.ensure_session("s1", "owners")
    store.write_checkpoint(running_checkpoint(Owner.current(), lease_expires_at=time.time() + 60))
    before = snapshot(store_url)

    with pytest.raises(RunOwnedElsewhere, match=f"driven by pid {os.getpid()}"):
        store.claim("r1", "s1", Owner.current(), lease_seconds=30)

    assert before == snapshot(store_url)


def _owner_of(proc: subprocess.Popen[bytes]) -> Owner:
    p = psutil.Process(proc.pid)
    return Owner(
        token=uuid.uuid4().hex, host=Owner.current().host, pid=p.pid, started=p.create_time()
    )


@pytest.mark.parametrize("state", ["reaped", "zombie"])
def test_a_dead_holder_frees_the_run_before_its_lease_ends(store_url: str, state: str) -> None:
    """A holder that is gone (reaped) or killed and not yet reaped (zombie) holds nothing:
    the run can be claimed although its lease has a minute left."""
    proc = subprocess.Popen(
        [sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE
    )
    try:
        holder = _owner_of(proc)
        store = Store(store_url)
        store.ensure_session("s1", "owners")
        store.write_checkpoint(running_checkpoint(holder, lease_expires_at=time.time() + 60))
        proc.kill()
        if state == "reaped":
            proc.wait()
        else:
            os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # dead, left unreaped
            assert psutil.STATUS_ZOMBIE == psutil.Process(proc.pid).status()
        taker = Owner.current()

        run = store.claim("r1", "s1", taker, lease_seconds=30)

        assert 3 == len(run.messages)
        row = stored_run_row(store_url, "r1")
        assert (2, taker.token, taker.pid) == (row.version, row.owner, row.owner_pid)
    finally:
        kill_tree(proc)


def test_a_stale_writer_is_rejected_after_a_takeover(store_url: str) -> None:
    """A holder whose lease ran out is taken over; its next write_checkpoint raises
    RunOwnedElsewhere (stale writer), its renew_lease returns False, and the store keeps the
    new owner's claim untouched."""
    store = Store(store_url)
    store.ensure_session("s1", "owners")
    stale = Owner.current()
    v1 = store.write_checkpoint(running_checkpoint(stale, lease_expires_at=time.time() - 1))
    fresh = Owner.current()
    store.claim("r1", "s1", fresh, lease_seconds=30)
    after_takeover = snapshot(store_url)

    with pytest.raises(RunOwnedElsewhere, match="stale writer"):
        store.write_checkpoint(next_checkpoint(stale, v1))
    assert False is store.renew_lease("r1", stale, v1, 30)

    assert after_takeover == snapshot(store_url)
    row = stored_run_row(store_url, "r1")
    assert (2, fresh.token, 3) == (row.version, row.owner, row.last_checkpoint_at_message_index)


def test_lease_left_is_read_for_the_holder_at_its_version_only(store_url: str) -> None:
    """lease_left: the seconds left for the holder at the version it wrote (negative once
    lapsed); None for anyone else, or at an older version after a takeover."""
    store = Store(store_url)
    store.ensure_session("s1", "owners")
    holder, other = Owner.current(), Owner.current()
    v1 = store.write_checkpoint(running_checkpoint(holder, lease_expires_at=time.time() + 30))

    left = store.lease_left("r1", holder, v1)
    assert left is not None and 29 < left <= 30
    assert None is store.lease_left("r1", other, v1)
    assert None is store.lease_left("r1", holder, v1 + 1)
    assert None is store.lease_left("nope", holder, v1)

    store.renew_lease("r1", holder, v1, -1)  # lapsed a second ago
    lapsed = store.lease_left("r1", holder, v1)
    assert lapsed is not None and lapsed < 0
    store.claim("r1", "s1", other, lease_seconds=30)
    assert None is store.lease_left("r1", holder, v1)


def test_the_fence_reads_a_fresh_lease_and_renews_a_low_one(store_url: str) -> None:
    """Before a batch the fence reads the lease: with at least two thirds of it left (the
    heartbeat renews it sooner) it writes nothing; with less it renews it in full; for a
    run taken over it raises RunOwnedElsewhere."""
    from killpoint.runtime.agent import _RunState

    store = Store(store_url)
    store.ensure_session("s1", "owners")
    holder = Owner.current()
    agent = Agent("fence", make_model(), store_url, checkpoint="tool-batch", lease_seconds=30)
    state = _RunState("r1", "s1", "go", time.time(), holder, history=[], session_state={})

    def expires() -> float:
        return stored_run_row(store_url, "r1").lease_expires_at

    state.version = store.write_checkpoint(
        running_checkpoint(holder, lease_expires_at=time.time() + 25)
    )
    fresh = expires()
    agent._fence(state)
    assert fresh == expires()

    store.renew_lease("r1", holder, state.version, 5)  # five seconds left: low
    agent._fence(state)
    assert 29 < expires() - time.time() <= 30

    store.renew_lease("r1", holder, state.version, -1)
    store.claim("r1", "s1", Owner.current(), lease_seconds=30)
    with pytest.raises(RunOwnedElsewhere, match="taken over"):
        agent._fence(state)


def _wait_for_lease_to_lapse(url: str, run_id: str, timeout: float = 30.0) -> None:
    """Wait on the row: until the clock passes its lease_expires_at (re-read every time)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        expires = stored_run_row(url, run_id).lease_expires_at
        left = (expires or 0) - time.time()
        if left < 0:
            return
        time.sleep(min(left + 0.01, 0.1))
    raise AssertionError(f"the lease of {run_id} did not lapse within {timeout}s")


def test_an_agent_that_stalls_past_its_lease_loses_the_run(
    openai_mock: respx.MockRouter, store_url: str
) -> None:
    """An agent stalls inside batch 2 (its event loop blocked, so no heartbeat) until its
    lease lapses; another owner claims the run. The stalled agent's batch-2 checkpoint is
    rejected with RunOwnedElsewhere: the store keeps checkpoint 1 and the new owner."""
    openai_mock.post("/responses").mock(side_effect=batch_replies(3, 1))
    taker = Owner.current()
    url = store_url

    async def step(n: int, i: int, run_id: str) -> str:
        """Step n; in batch 2, stall (blocking the loop) and get taken over."""
        if n == 2:
            _wait_for_lease_to_lapse(url, run_id)
            Store(url).claim(run_id, "s1", taker, lease_seconds=30)
        return f"step {n}"

    agent = Agent(
        "stall", make_model(), url, tools=[step], checkpoint="tool-batch", lease_seconds=0.5
    )

    with pytest.raises(RunOwnedElsewhere, match="stale writer"):
        agent.run("go", session_id="s1", run_id="r-stall")

    run = Store(url).read_run("r-stall")
    assert run is not None
    row = stored_run_row(url, "r-stall")
    assert (RunStatus.RUNNING, 1, 3, taker.token) == (
        run.status,
        run.checkpoints,
        len(run.messages),
        row.owner,
    )


def test_a_taken_over_agent_stops_before_its_next_batch(
    openai_mock: respx.MockRouter, store_url: str
) -> None:
    """The run is taken over while the agent waits for the model (after checkpoint 1): the
    agent refuses to run batch 2's tools (RunOwnedElsewhere) instead of repeating effects."""
    executed: list[int] = []
    url = store_url
    taker = Owner.current()
    replies = batch_replies(3, 1)

    def model_turn(request: httpx.Request) -> httpx.Response:
        if len(executed) == 1:  # turn 2: the agent holds checkpoint 1 and waits here
            _wait_for_lease_to_lapse(url, "r-fence")
            Store(url).claim("r-fence", "s1", taker, lease_seconds=30)
        return replies(request)

    openai_mock.post("/responses").mock(side_effect=model_turn)

    def step(n: int, i: int) -> str:
        """Step n."""
        executed.append(n)
        return f"step {n}"

    agent = Agent(
        "fence", make_model(), url, tools=[step], checkpoint="tool-batch", lease_seconds=0.5
    )

    with pytest.raises(RunOwnedElsewhere, match="taken over"):
        agent.run("go", session_id="s1", run_id="r-fence")

    assert [1] == executed
    assert taker.token == stored_run_row(url, "r-fence").owner


# -- processes --------------------------------------------------------------------------------


def test_two_processes_continue_one_run_exactly_one_drives_it(
    store_url: str, tmp_path: Path
) -> None:
    """After a crash leaves the run RUNNING, two worker processes are released together (one
    line each on their stdin pipes) to continue it. Exactly one claims it (it announces
    batch 3 and holds the run there); the other gets RunOwnedElsewhere. Released, the winner
    completes the run with the messages of an uninterrupted run."""
    run_id = f"run-{uuid.uuid4().hex[:12]}"
    log = tmp_path / "executions.log"
    crash = crash_after_checkpoint(store_url, "tool-batch", run_id, SESSION, tmp_path, log=log)
    assert (-signal.SIGKILL, 2) == (crash.returncode, crash.run_at_kill.checkpoints)

    args = worker_args(
        store_url, "tool-batch", run_id, SESSION, "continue", block_at="3:0", gate=True, log=log
    )
    with (
        worker(args, tmp_path / "racer-a.stderr") as a,
        worker(args, tmp_path / "racer-b.stderr") as b,
    ):
        assert ["waiting", "waiting"] == [a.event()["event"], b.event()["event"]]
        a.send("go")
        b.send("go")
        first = {"a": a.event(), "b": b.event()}
        events = sorted(e["event"] for e in first.values())
        assert ["error", "ready"] == events, first
        winner, loser = (a, b) if first["a"]["event"] == "ready" else (b, a)
        refusal = first["a"] if winner is b else first["b"]
        assert "RunOwnedElsewhere" == refusal["type"]
        assert f"driven by pid {winner.proc.pid}" in refusal["message"]
        assert 3 == loser.wait()

        winner.send("release")
        result = winner.event()
        assert 0 == winner.wait()

    assert ("COMPLETED", run_id, winner.proc.pid) == (
        result["status"],
        result["run_id"],
        result["pid"],
    )
    reference = reference_run(tmp_path / "reference.db", "tool-batch", run_id, SESSION)
    assert project(reference.messages) == project(
        [Message.from_json(m) for m in result["messages"]]
    )
    batch_4 = {pid for key, pid in executed_keys(log) if key.split(":")[1] == "4"}
    assert {winner.proc.pid} == batch_4
    assert loser.proc.pid not in {pid for _, pid in executed_keys(log)}


def test_a_stopped_worker_wakes_up_stale_and_its_writes_are_rejected(
    store_url: str, tmp_path: Path
) -> None:
    """Worker A holds the run in batch 3 with a short lease and is SIGSTOPped right after a
    heartbeat landed. Once the row's lease has lapsed, worker B continues and completes the
    run. A is woken (SIGCONT) and released: its batch-3 checkpoint is rejected
    (RunOwnedElsewhere) and the store is exactly as B left it."""
    run_id = f"run-{uuid.uuid4().hex[:12]}"
    lease = 2.0
    args_a = worker_args(
        store_url, "tool-batch", run_id, SESSION, "run", block_at="3:0", lease=lease
    )
    with worker(args_a, tmp_path / "stale.stderr") as a:
        assert "ready" == a.event()["event"]
        first = stored_run_row(store_url, run_id).lease_expires_at
        deadline = time.monotonic() + 10 * lease
        while stored_run_row(store_url, run_id).lease_expires_at == first:  # a heartbeat lands
            assert time.monotonic() < deadline, "worker A never renewed its lease"
            time.sleep(0.02)
        os.killpg(a.proc.pid, signal.SIGSTOP)  # between two heartbeats: no transaction open
        proc = psutil.Process(a.proc.pid)
        while proc.status() != psutil.STATUS_STOPPED:
            assert time.monotonic() < deadline, "worker A did not stop"
        _wait_for_lease_to_lapse(store_url, run_id)

        args_b = worker_args(store_url, "tool-batch", run_id, SESSION, "continue")
        with worker(args_b, tmp_path / "taker.stderr") as b:
            taken = b.event()
            assert 0 == b.wait(), b.stderr()
        assert ("COMPLETED", run_id) == (taken["status"], taken["run_id"])
        as_b_left_it = snapshot(store_url)

        os.killpg(a.proc.pid, signal.SIGCONT)
        a.send("release")
        stale = a.event()
        assert 3 == a.wait()

    assert ("error", "RunOwnedElsewhere") == (stale["event"], stale["type"])
    assert as_b_left_it == snapshot(store_url)
    run = Store(store_url).read_run(run_id)
    assert run is not None
    assert (RunStatus.COMPLETED, [Message.from_json(m) for m in taken["messages"]]) == (
        run.status,
        run.messages,
    )
