"""What every wire format of the scripted model shares: the parsed request, the answer to
render, errors a request can earn, and the table of formats by path.

A format is a thin codec around the one pure function (the script): it reads a request's
history into the script's conversation form (Responses API input items, which
`Conversation.from_input` normalises) and renders the reply (Responses API output items,
every id derived from the conversation) in its own shapes, whole or streamed. Nothing a
format does decides what the model answers.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any, Protocol

import httpx

from .conversation import Conversation

# The formats by name: also what the request log and check-adapter call them.
RESPONSES = "responses"
CHAT = "chat-completions"
MESSAGES = "anthropic-messages"


class RequestError(Exception):
    """A request the model refuses (400): `message` says what and how to fix it."""

    def __init__(self, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.param = param


@dataclass(frozen=True)
class Parsed:
    """A request read by its format: the conversation so far and how to answer it."""

    conversation: Conversation
    model: str
    stream: bool = False
    # Chat Completions' stream_options.include_usage: a last chunk carries the usage.
    include_usage: bool = False
    # The Responses API's whole input after chaining (previous_response_id), kept with
    # the reply so a later request can chain to it.
    items: list[Any] = field(default_factory=list)


@dataclass(frozen=True)
class Answer:
    """The reply in the script's form, ready for a format to render."""

    id: str
    model: str
    output: list[dict[str, Any]]  # Responses API output items (messages, function calls)
    input_tokens: int
    output_tokens: int

    @property
    def text(self) -> str | None:
        texts = [
            part["text"]
            for item in self.output
            if item["type"] == "message"
            for part in item["content"]
        ]
        return "".join(texts) if texts else None

    @property
    def calls(self) -> list[dict[str, Any]]:
        return [item for item in self.output if item["type"] == "function_call"]


class WireFormat(Protocol):
    name: str
    label: str  # what a person calls it: "OpenAI Chat Completions"
    path: re.Pattern[str]  # the POST paths it answers

    def parse(self, body: dict[str, Any], load: Any) -> Parsed:
        """The request's conversation; `load(response_id)` gives a stored response (the
        Responses API's chaining), None when the provider has none. Raises RequestError."""
        ...

    def render(self, parsed: Parsed, answer: Answer, turn: int) -> httpx.Response:
        """The answer as this format's response: a JSON body, or server-sent events."""
        ...

    def error(self, status: int, message: str, param: str | None = None) -> httpx.Response:
        """An error response in this format's shape."""
        ...


def pieces(text: str, size: int = 12) -> list[str]:
    """Text cut into the deltas a stream sends, `size` characters each (at least one)."""
    return [text[i : i + size] for i in range(0, len(text), size)] or [""]


def json_body(value: Any) -> bytes:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def openai_error(status: int, message: str, param: str | None = None) -> httpx.Response:
    """OpenAI's error shape, shared by the Responses API and Chat Completions."""
    kind = {429: "rate_limit_exceeded", 500: "server_error"}.get(status, "invalid_request_error")
    body = {"error": {"message": message, "type": kind, "param": param, "code": None}}
    return httpx.Response(status, json=body)


__all__ = [
    "CHAT",
    "MESSAGES",
    "RESPONSES",
    "Answer",
    "Parsed",
    "RequestError",
    "WireFormat",
    "json_body",
    "openai_error",
    "pieces",
]
