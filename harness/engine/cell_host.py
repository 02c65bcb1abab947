"""What a cell's run asks of the engine that hosts it (CellHost), and the engine's
configuration: a narrow Protocol, so that a cell's run never imports the engine."""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from killpoint.adapters.protocol import RuntimeAdapter
    from killpoint.engine.slots import Slots
    from killpoint.stores.backend import StoreBackend
    from killpoint.workers.worker import WorkerSpec

Row = tuple[str, str, str, str]  # runtime, scenario, mode, store kind


@dataclass
class EngineConfig:
    store: str = "sqlite"
    timeout: float = 30.0  # per worker
    confirm_timeout: float = 5.0
    keep: str = "failed"  # none | failed | all
    work_root: Path | None = None  # the cells' folders go right here
    work_parent: Path | None = None  # or in a new killpoint-* folder here (work_root.py)
    lease_seconds: float = 30.0
    # How the scripted model answers every turn re-asked after a crash, in every cell
    # (scenarios.behaviours); None: as the first time, except where a point's kind says.
    model_behaviour: str | None = None
    # Which unsynced operations a power-loss point's cut keeps (killpoint.powerloss.cut_models).
    cut: str = "synced"
    # Baselines record the store's file-system operations (fs-op points are planned), and
    # how many per checkpoint the points take (--fs-ops: all, syncs or a number).
    fs_trace: bool = False
    fs_ops: str = "all"


class CellHost(Protocol):
    """The engine as one cell's run sees it (killpoint.engine.engine.Engine is one)."""

    config: EngineConfig
    stores: StoreBackend
    stopping: threading.Event  # set when the campaign is interrupted
    slots: Slots  # cells at work at once
    session_id: str

    def adapter(self, runtime: str) -> RuntimeAdapter: ...

    def read_session(self, runtime: str, url: str) -> dict[str, Any] | None: ...

    def work_dir(self, label: str) -> Path: ...

    def worker_spec(self, row: Row, url: str, work: Path, **kwargs: Any) -> WorkerSpec: ...

    def keep_store(self, url: str, work: Path) -> None: ...

    def forget_store(self, url: str) -> None: ...

    def settle_folder(self, path: Path, keep: bool) -> None: ...
