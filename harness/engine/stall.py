"""What a cell that stalled was waiting on, when the kernel can say: SQLite's lock on the
store, held by a worker of the cell that killpoint had paused.

A `sigstop` kind pauses a worker wherever its threads are. If one of them was inside a
transaction, the paused process keeps its lock on the database file; in rollback-journal
mode nobody else commits a write until it is woken (and a writer waiting to commit keeps
new readers out as well). The takeover then passes its time limit, or the engine's read
through the adapter meets "database is locked". Either is the store's locking with a
frozen process, not a defect of killpoint or of the adapter, and the finding says which
process held which lock (read from /proc/locks at that moment).

The kinds pause a worker at a gate, where the thread the gate holds is between two
transactions; the lock of another thread's transaction at that instant would make the
cell's outcome a race of milliseconds, so that pause is taken again (`pause_unlocked`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence

from killpoint.engine.polling import poll
from killpoint.stores.sqlite import path_of
from killpoint.stores.sqlite_locks import blockers, holders
from killpoint.values.findings import Finding
from killpoint.workers.processes import Worker, threads_stopped


def paused_lock(url: str, workers: Sequence[Worker], waited: str) -> Finding | None:
    """A `store-locked` finding when a paused worker of the cell holds SQLite's lock on
    the store at `url` (None otherwise: another store, or no paused holder). `waited`:
    what passed its time limit or failed, kept as evidence."""
    if not url.startswith("sqlite"):
        return None
    held = blockers(path_of(url))
    roles = {w.pid: w.spec.log_name for w in workers}
    paused = {w.pid for w in workers if w.alive and threads_stopped(w.pid)}
    stuck = [h for h in held if h.pid in paused]
    if not stuck:
        return None
    first = stuck[0]
    lines = tuple(
        f"{roles.get(h.pid, 'a process outside the cell')} ({h})"
        + (", paused" if h.pid in paused else "")
        for h in held
    )
    return Finding(
        "store-locked",
        f"the {roles[first.pid]} was paused holding the store's SQLite lock "
        f"({first.level}), so no other process could write the store until it was woken: "
        f"{waited}",
        evidence=("SQLite's locks on the store (/proc/locks):", *lines),
    )


def holds_lock(url: str, worker: Worker) -> bool:
    """Whether `worker` holds a lock on the store at `url` that keeps any other process
    from writing it (in WAL mode, not the SHARED every open connection keeps)."""
    if not url.startswith("sqlite"):
        return False
    return any(h.pid == worker.pid for h in blockers(path_of(url)))


def holds_commit_lock(url: str, worker: Worker) -> bool:
    """Whether `worker` holds SQLite's EXCLUSIVE or PENDING lock on the store at `url`: a
    worker held inside its commit whose transaction has spilled pages to the file keeps
    every reader out of a rollback-journal database until it ends."""
    if not url.startswith("sqlite"):
        return False
    return any(
        h.pid == worker.pid and h.level in ("EXCLUSIVE", "PENDING") for h in holders(path_of(url))
    )


def pause_unlocked(
    url: str, worker: Worker, settle: float, deadline: float, stopping: threading.Event
) -> int:
    """SIGSTOP a worker held at its gate, where its gated thread is between transactions;
    how many times the pause had to be taken again.

    Another of its threads may be inside a transaction at that moment (DBOS's background
    jobs write twice a second). A pause landing there keeps SQLite's lock on the store, and
    whether a takeover can then write would hang on a race of milliseconds. So that pause
    is undone and taken again once the worker has let the lock go. A lock still held after
    `settle` seconds stays: the cell's end names it (`store-locked`)."""
    end = time.monotonic() + settle
    worker.stop_all(deadline)
    retaken = 0
    while holds_lock(url, worker) and time.monotonic() < end:
        worker.cont()
        poll(lambda: not holds_lock(url, worker), max(0.0, end - time.monotonic()), stopping)
        worker.stop_all(deadline)
        retaken += 1
    return retaken


__all__ = ["holds_commit_lock", "holds_lock", "pause_unlocked", "paused_lock"]
