"""The state a row's traced worker left at one point, copied (killpoint.engine.row_trace),
and how a cell takes it up: in its folder, as what its own kill there would have left."""

from __future__ import annotations

import shutil
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from killpoint.values.points import CrashPoint
from killpoint.values.sentences import count
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
    t0: float = 0.0  # the trace's clock zero (time.monotonic()): its events count from it
    # Spans of `timeline` that are the trace's stops for earlier copies (another cell's).
    stops: tuple[tuple[int, int], ...] = ()
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

    def events(self, t0: float | None = None) -> list[Event]:
        """The trace's timeline up to the copy, then the copy itself, for the cell's: on
        the cell's clock when its zero `t0` is given (the trace ran before the cell
        began, so its events come before zero), and without the trace's stops for other
        cells' copies (said in one line)."""
        shift = 0.0 if t0 is None else self.t0 - t0
        skipped = {n for start, end in self.stops for n in range(start, end)}
        kept = [
            e._replace(t=round(e.t + shift, 4))
            for n, e in enumerate(self.timeline)
            if n not in skipped
        ]
        how = "after its SIGKILL" if self.killed else "while it was stopped (SIGSTOP)"
        at = kept[-1].t if kept else shift
        notes = []
        if self.stops:
            notes.append(
                Event(
                    at,
                    f"{count(len(self.stops), 'earlier stop')} of the traced worker, for other "
                    f"cells' copies, left out ({count(len(skipped), 'event')})",
                    "other",
                    "harness",
                )
            )
        return [
            *kept,
            *notes,
            Event(
                at,
                f"the state at {self.point} copied from the row's traced worker (pid "
                f"{self.pid}) {how}: no worker of this cell's own is killed",
                "kill",
                "faults",
            ),
        ]


__all__ = ["Copy"]
