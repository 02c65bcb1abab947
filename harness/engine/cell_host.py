"""What a cell's run asks of the engine that hosts it (CellHost): a narrow Protocol, so that
a cell's run never imports the engine; and the seam through which a cell's first crash is
watched (CrashWatcher: a crash-state corpus keeps the state there)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from collections.abc import Sequence

    from killpoint.adapters.protocol import RuntimeAdapter
    from killpoint.engine.options import EngineConfig
    from killpoint.engine.slots import Slots
    from killpoint.kinds.base import Plan
    from killpoint.stores.backend import StoreBackend
    from killpoint.values.cell import Cell, Row
    from killpoint.workers.worker import WorkerSpec


class CrashedCell(Protocol):
    """A cell's run as a CrashWatcher sees it: its folder and store hold what the crash
    left, and nothing has resumed yet."""

    cell: Cell
    work: Path | None
    url: str

    def progress(self) -> int: ...

    def read(self) -> dict[str, Any] | None: ...


class CrashWatcher(Protocol):
    """Told of each cell's first crash as it happens, before anything resumes."""

    def first_crash(self, run: CrashedCell, plan: Plan) -> None: ...


class CellHost(Protocol):
    """The engine as one cell's run sees it (killpoint.engine.engine.Engine is one)."""

    config: EngineConfig
    stores: StoreBackend
    stopping: threading.Event  # set when the campaign is interrupted
    slots: Slots  # cells at work at once
    session_id: str

    @property
    def watchers(self) -> Sequence[CrashWatcher]:
        """Told of each cell's first crash."""
        ...

    def adapter(self, runtime: str) -> RuntimeAdapter: ...

    def read_session(self, runtime: str, url: str) -> dict[str, Any] | None: ...

    def work_dir(self, label: str) -> Path: ...

    def worker_spec(self, row: Row, url: str, work: Path, **kwargs: Any) -> WorkerSpec: ...

    def keep_store(self, url: str, work: Path) -> None: ...

    def forget_store(self, url: str) -> None: ...

    def settle_folder(self, path: Path, keep: bool) -> None: ...
