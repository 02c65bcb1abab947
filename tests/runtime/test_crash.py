# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Real crashes: a worker process is SIGKILLed at a known checkpoint (it announces the point
through its stdout pipe, then blocks), and a new process continues the run."""

from __future__ import annotations

import signal
import uuid
from collections import Counter
from pathlib import Path

import pytest

from killpoint.runtime import Message, RunNotFound, RunOutput, RunStatus, Store
from tests.helpers import (
    crash_after_checkpoint,
    executed_keys,
    project,
    worker,
    worker_args,
)
from tests.runtime.worker import reference_run

pytestmark = pytest.mark.slow

BATCHES, SIZE = 4, 2
SESSION = "s-crash"


def new_run_id() -> str:
    return f"run-{uuid.uuid4().hex[:12]}"


def uninterrupted(tmp_path: Path, mode: str, run_id: str) -> RunOutput:
    """The same run, same run id, never killed, in this process on its own SQLite file."""
    return reference_run(tmp_path / "reference.db", mode, run_id, SESSION, BATCHES, SIZE)


def continue_in_new_process(url: str, mode: str, run_id: str, tmp_path: Path, log: Path) -> dict:
    """Continue the run in a fresh worker process; returns its last event (exit code 0)."""
    args = worker_args(url, mode, run_id, SESSION, "continue", log=log)
    with worker(args, tmp_path / "continue.stderr") as w:
        event = w.event()
        assert 0 == w.wait(), w.stderr()
    return event


def test_killed_after_checkpoint_2_then_continued_in_a_new_process(
    store_url: str, tmp_path: Path
) -> None:
    """A worker announces from batch 3 that checkpoint 2 has landed; the store holds exactly
    2 checkpoints (RUNNING, through batch 2); SIGKILL (-9). A new process continues it: same
    run id, COMPLETED, the same messages as a run that was never killed; batches 1 and 2 are
    not run again, and the re-run call of batch 3 gets the same idempotency key."""
    run_id, mode = new_run_id(), "tool-batch"
    log = tmp_path / "executions.log"

    crash = crash_after_checkpoint(store_url, mode, run_id, SESSION, tmp_path, log=log)

    assert {"event": "ready", "key": f"{run_id}:3:0"} == crash.ready
    assert -signal.SIGKILL == crash.returncode
    run = crash.run_at_kill
    assert run is not None
    assert (RunStatus.RUNNING, 2, 7) == (
        run.status,
        run.checkpoints,
        run.last_checkpoint_at_message_index,
    )
    assert 7 == len(run.messages)
    crashed_pid = {pid for _, pid in executed_keys(log)}
    assert 1 == len(crashed_pid)

    result = continue_in_new_process(store_url, mode, run_id, tmp_path, log)

    assert ("result", run_id, "COMPLETED") == (result["event"], result["run_id"], result["status"])
    reference = uninterrupted(tmp_path, mode, run_id)
    resumed = [Message.from_json(m) for m in result["messages"]]
    assert project(reference.messages) == project(resumed)
    stored = Store(store_url).read_run(run_id)
    assert stored is not None
    assert (RunStatus.COMPLETED, project(reference.messages)) == (
        stored.status,
        project(stored.messages),
    )
    assert [(e.call_id, e.result) for e in reference.tool_executions] == [
        (e.call_id, e.result) for e in stored.tool_executions
    ]
    runs_of = Counter(key for key, _ in executed_keys(log))
    assert {f"{run_id}:{n}:{i}": 1 for n in (1, 2) for i in range(SIZE)} == {
        k: v for k, v in runs_of.items() if k.split(":")[1] in ("1", "2")
    }
    assert 2 == runs_of[f"{run_id}:3:0"]  # same key in the killed and in the new process
    assert 1 == runs_of[f"{run_id}:4:0"]


def test_killed_mid_batch_in_tool_mode_reruns_only_calls_without_a_result(
    store_url: str, tmp_path: Path
) -> None:
    """ "tool" mode: the worker is killed inside call 3:1 after call 3:0's result has landed
    (its own checkpoint). The new process runs 3:1 again (same idempotency key) and does not
    run 3:0 again; the run completes as an uninterrupted one."""
    run_id = new_run_id()
    log = tmp_path / "executions.log"

    crash = crash_after_checkpoint(
        store_url, "tool", run_id, SESSION, tmp_path, block_at="3:1", log=log
    )

    assert -signal.SIGKILL == crash.returncode
    assert {"event": "ready", "key": f"{run_id}:3:1"} == crash.ready
    run = crash.run_at_kill
    assert run is not None
    assert ["call_3_0"] == [e.call_id for e in run.tool_executions if e.turn == 3]
    assert "assistant" == run.messages[-1].role  # batch 3's calls, results not yet appended

    result = continue_in_new_process(store_url, "tool", run_id, tmp_path, log)

    assert ("COMPLETED", run_id) == (result["status"], result["run_id"])
    runs_of = Counter(key for key, _ in executed_keys(log))
    assert (1, 2) == (runs_of[f"{run_id}:3:0"], runs_of[f"{run_id}:3:1"])
    reference = uninterrupted(tmp_path, "tool", run_id)
    assert project(reference.messages) == project(
        [Message.from_json(m) for m in result["messages"]]
    )


def test_runs_mode_crash_leaves_the_session_and_no_run(store_url: str, tmp_path: Path) -> None:
    """ "runs": killed in batch 3, the run has no row (it was never persisted), the session
    row exists; continuing it in a new process is RunNotFound."""
    run_id = new_run_id()

    crash = crash_after_checkpoint(store_url, "runs", run_id, SESSION, tmp_path)

    assert -signal.SIGKILL == crash.returncode
    assert "ready" == crash.ready["event"]
    assert None is crash.run_at_kill
    assert crash.session_at_kill is not None
    store = Store(store_url)
    assert None is store.read_run(run_id)
    session = store.read_session(SESSION)
    assert session is not None
    assert [] == session["run_ids"]
    assert 0 == store.count_rows()["kp_run_messages"]

    args = worker_args(store_url, "runs", run_id, SESSION, "continue")
    with worker(args, tmp_path / "continue.stderr") as w:
        event = w.event()
        assert 3 == w.wait()
    assert ("error", RunNotFound.__name__) == (event["event"], event["type"])
