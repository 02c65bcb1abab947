"""The campaign's pool: the queued job of the smallest key runs first, jobs of one key in
the order they came, and what is queued at shutdown never runs."""

# ruff: noqa: SIM300
from __future__ import annotations

import threading

import pytest

from killpoint.engine.priority_pool import PriorityPool


def busy_pool() -> tuple[PriorityPool, threading.Event, threading.Event]:
    """A pool of one thread, held by a job until `release` is set (`held` once it is)."""
    pool = PriorityPool(1, thread_name_prefix="test")
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        held.set()
        release.wait(10)

    pool.submit(hold, key=0)
    assert held.wait(10)
    return pool, held, release


def test_the_smallest_key_runs_first_and_one_key_in_arrival_order() -> None:
    pool, _, release = busy_pool()
    ran: list[str] = []
    futures = [
        pool.submit(ran.append, name, key=key)
        for name, key in [("c", (2, 0)), ("a1", (1, 5)), ("b", (1, 9)), ("a2", (1, 5))]
    ]
    release.set()
    for f in futures:
        f.result(10)
    pool.shutdown()
    assert ["a1", "a2", "b", "c"] == ran


def test_a_job_queued_at_shutdown_with_cancel_never_runs() -> None:
    pool, _, release = busy_pool()
    ran: list[str] = []
    queued = pool.submit(ran.append, "late", key=1)
    release.set()
    pool.shutdown(wait=True, cancel_futures=True)
    assert queued.cancelled() or ran == ["late"]  # the thread may have taken it first
    assert ran in ([], ["late"])


def test_a_thread_that_cannot_start_leaves_the_job_queued(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The next thread refused (out of threads or memory): the job stays queued, and a
    thread the pool has runs it (killpoint.engine.scheduler.submit relies on this)."""
    pool, _, release = busy_pool()

    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    pool._max = 2  # room for a second thread, which cannot start
    monkeypatch.setattr(threading.Thread, "start", refuse)
    with pytest.raises(RuntimeError):
        pool.submit(lambda: "done", key=1)
    monkeypatch.undo()
    assert 1 == len(pool._threads)
    later = pool._queue[0][2]
    release.set()
    assert "done" == later.result(10)
    pool.shutdown()
