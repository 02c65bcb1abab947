"""Run statuses and checkpoint modes."""

from __future__ import annotations

from enum import StrEnum
from typing import Literal, get_args


class RunStatus(StrEnum):
    PENDING = "PENDING"
    RUNNING = "RUNNING"
    PAUSED = "PAUSED"
    COMPLETED = "COMPLETED"
    ERROR = "ERROR"
    CANCELLED = "CANCELLED"

    @property
    def terminal(self) -> bool:
        return self in TERMINAL


# PAUSED counts as terminal for persistence: the worker stops and waits for answers.
TERMINAL = frozenset({RunStatus.COMPLETED, RunStatus.PAUSED, RunStatus.ERROR, RunStatus.CANCELLED})
CONTINUABLE = frozenset({RunStatus.RUNNING, RunStatus.ERROR, RunStatus.PAUSED})

CheckpointMode = Literal["runs", "tool-batch", "tool"]
CHECKPOINT_MODES: tuple[str, ...] = get_args(CheckpointMode)
