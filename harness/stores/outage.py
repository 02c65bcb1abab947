"""When killpoint's own dependencies fail under a cell: the store server goes away or
restarts, the work folder's disk fills up, or no thread or process can be started
(killpoint.workers.limits).

Each costs the cells it touched and nothing more. A cell is watched from before its
store is made to after its findings are counted: when the server was unreachable, or
restarted (its start time changed) without the cell's own store-restart fault doing it,
or the work folder ran out of space, or a thread or fork was refused, what the cell saw
says nothing about the runtime. Its findings are then kept as evidence of one
`store-unavailable` (or `disk-full`, `resource-exhausted`) finding, which is not counted against the runtime, and the campaign goes on. A server
that is down makes each cell wait for it (a restart takes seconds), up to the engine's
time limit from the first failure; after that, cells fail at once until it answers.
"""

from __future__ import annotations

import errno
import os
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from killpoint.errors import StoreUnavailable
from killpoint.stores.sampling import FULL_BELOW, Sampler, free_space
from killpoint.values.findings import Finding

if TYPE_CHECKING:
    from killpoint.stores.backend import StoreBackend

# What each outage is about, as a finding's path.
OUTAGE_PATHS = {"store-unavailable": "store", "disk-full": "work folder", "resource-exhausted": "processes"}  # fmt: skip
# What a full disk looks like in a worker's error or log, whoever raised it.
DISK_FULL_TEXT = ("No space left on device", "database or disk is full", "ENOSPC", "Errno 28")

_down_since: dict[int, float] = {}  # id(backend) -> when it was first found unreachable
_down_lock = threading.Lock()


def wait_until_up(stores: Any, grace: float, stop: threading.Event) -> str:
    """The server's life once it answers; StoreUnavailable when it has not answered for
    `grace` seconds since it was first found down (or the campaign is stopping)."""
    pause = 0.05
    while True:
        try:
            life = str(stores.life())
        except StoreUnavailable:
            now = time.monotonic()
            with _down_lock:
                since = _down_since.setdefault(id(stores), now)
            if now - since >= grace or stop.is_set():
                raise
            stop.wait(min(pause, since + grace - now))
            pause = min(pause * 2, 1.0)
            continue
        with _down_lock:
            _down_since.pop(id(stores), None)
        return life


class Watch:
    """One cell's (or baseline's) view of the store server and the work folder."""

    def __init__(
        self,
        stores: StoreBackend,
        work_root: Path,
        grace: float,
        stop: threading.Event,
        sampler: Sampler | None = None,
    ) -> None:
        self.stores = stores
        self.work_root = work_root
        self.sampler = sampler  # what was seen while the cell ran, between its ends
        self.since = time.monotonic()
        self.before: str | None = None
        self.cause: str | None = None  # the server could not be reached before the cell
        # A worker that cannot write its log dies without a word: the free space when the
        # cell began counts as much as at its end (other cells' folders go in between).
        self.free_before = free_space(work_root)
        if not hasattr(stores, "life"):
            return  # an embedded store: no server to lose
        try:
            self.before = wait_until_up(stores, grace, stop)
        except StoreUnavailable as exc:
            self.cause = str(exc)

    def store_problem(self, own_url: str = "") -> str | None:
        """Why the store server failed this cell, or None."""
        if self.cause is not None:
            return self.cause
        if self.before is None:
            return None
        try:
            now = str(self.stores.life())  # type: ignore[attr-defined]
        except StoreUnavailable as exc:
            return f"{exc} (at the end of the cell)"
        if now == self.before:
            down = self.sampler.down.during(self.since, time.monotonic()) if self.sampler else None
            return None if down is None else f"{down} (while the cell ran)"
        by = self.stores.restarted_by(now)  # type: ignore[attr-defined]
        if by is not None and own_url and by == own_url:
            return None  # the cell's own store-restart fault: what it tests
        who = "by killpoint's store-restart fault of another cell" if by else "during the cell"
        return f"the store server restarted {who} (up since {self.before}, now since {now})"

    def disk_problem(self, seen: str) -> str | None:
        """Why the work folder failed this cell (it is full), or None."""
        free = min(self.free_before, free_space(self.work_root))
        if self.sampler is not None:
            low = self.sampler.low.during(self.since, time.monotonic())
            free = free if low is None else min(free, low)
        if free < FULL_BELOW or any(marker in seen for marker in DISK_FULL_TEXT):
            return (
                f"the work folder {str(self.work_root)!r} is full "
                f"(ENOSPC: {os.strerror(errno.ENOSPC)}; {free} bytes free)"
            )
        return None

    def settle(
        self,
        findings: list[Finding],
        seen: str,
        own_url: str = "",
        exhausted: Callable[[str], str | None] | None = None,
    ) -> list[Finding]:
        """The cell's findings, or, when a dependency failed under it, one finding naming
        that cause with the findings it had as evidence. `seen`: the cell's workers'
        stderr, where a worker's ENOSPC shows; `exhausted`: why, from what the cell
        saw, it could not get a thread or a process (killpoint.workers.limits, a layer
        above this one)."""
        text = seen + "\n".join(f.sentence for f in findings)
        cause = self.store_problem(own_url)
        kind = "store-unavailable"
        if cause is None:
            cause, kind = self.disk_problem(text), "disk-full"
        if cause is None and exhausted is not None:
            cause, kind = exhausted(text), "resource-exhausted"
        if cause is None:
            return findings
        return [outage_finding(kind, cause, findings)]


def outage_finding(kind: str, cause: str, seen: list[Finding]) -> Finding:
    """Not counted against the runtime (`expected`): the cell is to be rerun."""
    evidence = tuple(f"{f.kind}: {f.sentence}" for f in seen if f.verdict != "ok")
    return Finding(
        kind,
        f"{cause}; nothing is said of the runtime here (rerun the cell)",
        path=OUTAGE_PATHS.get(kind, "work folder"),
        evidence=evidence,
        expected=True,
    )


__all__ = ["DISK_FULL_TEXT", "FULL_BELOW", "Watch", "outage_finding", "wait_until_up"]
