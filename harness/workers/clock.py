"""A worker whose wall clock runs ahead of or behind the others' (clock-skew points).

Set inside the worker, before its run, by replacing `time.time` and `time.time_ns` with
the true clock plus the skew: whatever reads the wall clock through them at call time
(the reference runtime's leases and claims, most Python code) reads the skewed time.
What it cannot reach is said in docs/explanation/history.md: a clock read by `datetime.now()` or
`datetime.utcnow()` (C code that reads the system clock itself), `from time import time`
bound before the worker forked, and a clock the store server keeps (PostgreSQL `now()`).
The run's history keeps the true time (scenarios.history.true_time).
"""

from __future__ import annotations

import time


def skew_clock(seconds: float) -> None:
    """From now on in this process, `time.time()` and `time.time_ns()` run `seconds` ahead
    of the true wall clock (behind when negative)."""
    ns = round(seconds * 1e9)

    def skewed() -> float:
        return time.clock_gettime(time.CLOCK_REALTIME) + seconds

    def skewed_ns() -> int:
        return time.clock_gettime_ns(time.CLOCK_REALTIME) + ns

    time.time = skewed
    time.time_ns = skewed_ns


__all__ = ["skew_clock"]
