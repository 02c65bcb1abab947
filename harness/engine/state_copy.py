"""The state a row's traced worker left at one point, copied (killpoint.engine.row_trace),
and how a cell takes it up: in its folder, as what its own kill there would have left."""

from __future__ import annotations

import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from killpoint.values.points import CrashPoint
from killpoint.values.timeline import Event

if TYPE_CHECKING:
    from killpoint.engine.cell_host import CellHost


@dataclass
class Copy:
    """The state a traced worker left at one point: its folder, what the worker had
    acknowledged by then, and the trace's timeline up to it."""

    point: CrashPoint
    folder: Path
    acks: list[dict[str, Any]]
    timeline: list[Event]
    pid: int
    killed: bool  # the copy was taken after a real SIGKILL (the row's last point)
    users: int = 0  # cells still to place it
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def place(self, work: Path) -> None:
        """Copy the state into a cell's (empty) folder."""
        shutil.copytree(self.folder, work, dirs_exist_ok=True)

    def done_with(self, host: CellHost) -> None:
        """One cell has placed it; the last one removes it."""
        with self._lock:
            self.users -= 1
            last = self.users <= 0
        if last:
            host.settle_folder(self.folder, keep=False)

    def events(self) -> list[Event]:
        """The trace's timeline up to the copy, then the copy itself, for the cell's."""
        how = "after its SIGKILL" if self.killed else "while it was stopped (SIGSTOP)"
        return [
            *self.timeline,
            Event(
                self.timeline[-1].t if self.timeline else 0.0,
                f"the state at {self.point} copied from the row's traced worker (pid "
                f"{self.pid}) {how}: no worker of this cell's own is killed",
                "kill",
                "faults",
            ),
        ]


__all__ = ["Copy"]
