"""A worker's wall clock set off (clock-skew points), in a child process: time.time and
time.time_ns run behind, the true clock and the history's times do not."""

from __future__ import annotations

import multiprocessing
import time
from multiprocessing.connection import Connection


def _child(conn: Connection) -> None:
    from killpoint.scenarios import history
    from killpoint.workers.clock import skew_clock

    skew_clock(-60.0)
    conn.send((time.time(), time.time_ns() / 1e9, history.true_time()))


def test_the_clock_runs_behind_by_the_skew_and_the_true_clock_does_not() -> None:
    ours, theirs = multiprocessing.Pipe()
    child = multiprocessing.get_context("fork").Process(target=_child, args=(theirs,))
    child.start()
    skewed, skewed_ns, true = ours.recv()
    child.join()
    now = time.time()
    assert abs(true - now) < 5
    assert abs(skewed - (true - 60)) < 1
    assert abs(skewed_ns - (true - 60)) < 1
