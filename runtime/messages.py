"""The run's data: messages, tool calls, tool executions, usage, and the run output."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Literal

from .status import RunStatus

Role = Literal["user", "assistant", "tool"]


@dataclass(frozen=True)
class ToolCall:
    call_id: str
    name: str
    arguments: str  # the JSON string exactly as the model sent it


@dataclass(frozen=True)
class Message:
    role: Role
    content: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    call_id: str | None = None  # role "tool": the call this result answers
    name: str | None = None  # role "tool": the tool's name
    status: str | None = None  # role "tool": "ok" or "error"
    response_id: str | None = None  # role "assistant": the model response it came from

    def to_json(self) -> str:
        data = {k: v for k, v in asdict(self).items() if v not in (None, ())}
        # ensure_ascii keeps NUL bytes and lone surrogates representable on every backend.
        return json.dumps(data, ensure_ascii=True, sort_keys=True)

    @classmethod
    def from_json(cls, text: str) -> Message:
        data = json.loads(text)
        calls = tuple(ToolCall(**c) for c in data.pop("tool_calls", ()))
        return cls(tool_calls=calls, **data)


@dataclass(frozen=True)
class ToolExecution:
    call_id: str
    name: str
    arguments: str
    result: str
    status: str  # "ok" | "error" | "rejected"
    turn: int
    call_index: int
    idempotency_key: str


@dataclass
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    model_calls: int = 0

    def add(self, other: Usage) -> None:
        self.input_tokens += other.input_tokens
        self.output_tokens += other.output_tokens
        self.total_tokens += other.total_tokens
        self.model_calls += other.model_calls

    def to_dict(self) -> dict[str, int]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> Usage:
        return cls(**(data or {}))


@dataclass
class RunOutput:
    run_id: str
    session_id: str
    status: RunStatus
    messages: list[Message] = field(default_factory=list)
    tool_executions: list[ToolExecution] = field(default_factory=list)
    content: str | None = None
    error: str | None = None
    usage: Usage = field(default_factory=Usage)
    last_checkpoint_at_message_index: int = 0
    checkpoints: int = 0
    # PAUSED: the call ids that wait for a confirmation answer.
    pending_confirmations: list[str] = field(default_factory=list)

    @property
    def is_paused(self) -> bool:
        return self.status is RunStatus.PAUSED
