"""Cancellation requests, visible to every agent in the process.

A request is only a flag: the run notices it at its next step boundary (before a
model turn, after a tool batch) and ends as CANCELLED, persisted. Nothing is
interrupted mid-step, so no half-written state can follow from a cancel.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_requested: set[str] = set()


def request_cancel(run_id: str) -> None:
    with _lock:
        _requested.add(run_id)


def is_cancel_requested(run_id: str) -> bool:
    with _lock:
        return run_id in _requested


def clear(run_id: str) -> None:
    with _lock:
        _requested.discard(run_id)
