"""What a scripted model answers: tool calls, or a final message."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .conversation import Conversation


@dataclass(frozen=True)
class ToolRequest:
    """One function call the model asks for."""

    name: str
    arguments: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Reply:
    """A model reply: calls (one batch, run concurrently) or a final text, or both."""

    calls: tuple[ToolRequest, ...] = ()
    text: str | None = None

    @classmethod
    def call(cls, name: str, **arguments: Any) -> Reply:
        return cls(calls=(ToolRequest(name, arguments),))

    @classmethod
    def batch(cls, *calls: ToolRequest) -> Reply:
        return cls(calls=tuple(calls))

    @classmethod
    def final(cls, text: str) -> Reply:
        return cls(text=text)


# A script is a pure function of the conversation so far: no counters, no clocks.
Script = Callable[[Conversation], Reply]
