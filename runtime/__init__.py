"""killpoint's reference agent runtime: the system under test that shows what correct looks like."""

from __future__ import annotations

from .agent import Agent, idempotency_key
from .errors import (
    CheckpointFailed,
    ConfigurationError,
    RunNotContinuable,
    RunNotFound,
    RunOwnedElsewhere,
)
from .messages import Message, RunOutput, ToolCall, ToolExecution, Usage
from .model import ModelError, OpenAIResponses
from .status import CHECKPOINT_MODES, CheckpointMode, RunStatus
from .store import Store
from .tools import Tool, tool

__all__ = [
    "CHECKPOINT_MODES",
    "Agent",
    "CheckpointFailed",
    "CheckpointMode",
    "ConfigurationError",
    "Message",
    "ModelError",
    "OpenAIResponses",
    "RunNotContinuable",
    "RunNotFound",
    "RunOutput",
    "RunOwnedElsewhere",
    "RunStatus",
    "Store",
    "Tool",
    "ToolCall",
    "ToolExecution",
    "Usage",
    "idempotency_key",
    "tool",
]
