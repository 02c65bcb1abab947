"""Cancellation requests, visible to every agent in the process.

A cancel takes effect at the first step boundary after it was asked for, crash or
no crash. A request made while a step is in flight (a model turn, a tool batch)
remembers how many messages the run had then: the step completes, and the run
ends CANCELLED at the boundary after it. Resumed after a crash from before that
boundary, the run redoes the step and cancels at the same place; resumed from
after it, it cancels at once. Nothing is interrupted mid-step, so no half-written
state can follow from a cancel.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_requested: dict[str, int] = {}  # run_id -> cancel once the run has more messages than this


def request_cancel(run_id: str, after: int = -1) -> None:
    """Cancel once the run has more than `after` messages (-1: at its next boundary)."""
    with _lock:
        _requested[run_id] = min(after, _requested.get(run_id, after))


def cancel_after(run_id: str) -> int | None:
    with _lock:
        return _requested.get(run_id)


def clear(run_id: str) -> None:
    with _lock:
        _requested.pop(run_id, None)
