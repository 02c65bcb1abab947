"""The store's file-system operations as the FUSE server sees them: counted per checkpoint,
recorded, and one of them held on request (fs-op points, docs/powerloss.md).

The owner (the engine) tells the server where each checkpoint begins with a mark, while
the worker is parked at the gate that ends the one before, so every operation the
worker's thread made before the gate is counted before the mark and every one after it
after. Operations are numbered from 0 after each mark. A hold names the Nth operation
after the current mark: the thread serving it stops before passing it to the backing
folder (or after, with `after`), tells the owner, and waits until the owner drops it;
an operation held before it reaches the backing folder then fails (EIO) and leaves
nothing there.

Counted, in the words of the system calls: write, fsync, fdatasync, truncate, rename,
unlink, and a directory's fsync (fsyncdir). Reads, opens and attributes change nothing.
"""

from __future__ import annotations

import json
import os
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from typing import Any

WRITE, FSYNC, FDATASYNC, FSYNCDIR = "write", "fsync", "fdatasync", "fsyncdir"
TRUNCATE, RENAME, UNLINK = "truncate", "rename", "unlink"
KINDS = (WRITE, FSYNC, FDATASYNC, FSYNCDIR, TRUNCATE, RENAME, UNLINK)
SYNCS = (FSYNC, FDATASYNC, FSYNCDIR)
# Recorded operations kept for the owner: a baseline's trace, not an unbounded log.
MAX_RECORDED = 100_000


@dataclass(frozen=True)
class TracedOp:
    """One operation: the checkpoint mark it followed, its number after that mark, its
    kind, its file (relative to the mount; `old -> new` for a rename), offset and length
    (a write's; a truncation's new length as its length)."""

    checkpoint: int
    n: int
    kind: str
    file: str
    offset: int = 0
    length: int = 0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> TracedOp:
        return cls(**{k: data[k] for k in ("checkpoint", "n", "kind", "file", "offset", "length")})

    def describe(self) -> str:
        where = f" at offset {self.offset}, {self.length} bytes" if self.kind == WRITE else ""
        if self.kind == TRUNCATE:
            where = f" to {self.length} bytes"
        return f"{self.kind} of {self.file}{where}"


def _tell(path: str, op: TracedOp) -> None:
    """One `fs` event of the run's history (killpoint.scenarios.history: the same line
    shape, written by this server rather than by a worker), before the operation runs: the
    worker's call that made it returns only after, so every event the worker records once
    it returns comes later in the file. A history that cannot be written is left as is."""
    line = json.dumps(
        {
            "event": "fs",
            "pid": os.getpid(),
            "tid": threading.get_native_id(),
            "at": time.clock_gettime(time.CLOCK_REALTIME),
            "op": op.kind,
            "file": op.file,
        }
    )
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)
    except OSError:
        pass


class Held:
    """The operation being held: released by the owner's drop."""

    def __init__(self, op: TracedOp, after: bool) -> None:
        self.op = op
        self.after = after
        self.dropped = threading.Event()


class OpTrace:
    """Counts and records operations; holds the one the owner armed."""

    def __init__(self, notify: Callable[[dict[str, Any]], None]) -> None:
        self._lock = threading.Lock()
        self._notify = notify
        self.checkpoint = 0  # 0: no mark yet
        self._count = 0
        self.recorded: list[TracedOp] = []
        self._armed: tuple[int, int, bool] | None = None  # (checkpoint, n, after)
        self.held: Held | None = None
        self._history: str | None = None  # a run's history file (record_into)

    def record_into(self, path: str) -> None:
        """Append each write and sync to the run's history at `path` from now on."""
        with self._lock:
            self._history = path

    def mark(self, checkpoint: int) -> None:
        with self._lock:
            self.checkpoint = checkpoint
            self._count = 0

    def arm(self, n: int, after: bool) -> None:
        """Hold the Nth operation after the current mark (0-based)."""
        with self._lock:
            self._armed = (self.checkpoint, n, after)

    def drop(self) -> None:
        """Let the held operation go (failed if it was held before the backing saw it)."""
        with self._lock:
            held = self.held
            self._armed = None
        if held is not None:
            held.dropped.set()

    def ops(self) -> list[TracedOp]:
        with self._lock:
            return list(self.recorded)

    def seen(self, kind: str, file: str, offset: int = 0, length: int = 0) -> Held | None:
        """An operation arrived; the Held when it is the armed one (the caller waits)."""
        with self._lock:
            op = TracedOp(self.checkpoint, self._count, kind, file, offset, length)
            self._count += 1
            if self._history is not None and kind in (WRITE, *SYNCS):
                _tell(self._history, op)
            if len(self.recorded) < MAX_RECORDED:
                self.recorded.append(op)
            armed = self._armed
            if armed is None or armed[:2] != (op.checkpoint, op.n):
                return None
            self._armed = None
            self.held = Held(op, armed[2])
            return self.held

    def wait(self, held: Held) -> None:
        """Tell the owner, then block this (the FUSE loop's) thread until it drops."""
        self._notify({"held": held.op.to_json(), "after": held.after})
        held.dropped.wait()
