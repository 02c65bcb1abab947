"""The Anthropic Messages API (`POST /v1/messages`): what the anthropic SDK and clients of
Claude models send.

The history is `messages` of role user or assistant, each content a string or a list of
blocks: `text`, `tool_use` (id, name, input) in an assistant's, `tool_result`
(tool_use_id, content) in a user's; `system` is a top-level field, not conversation. A
call's id is `toolu_…`, from the same digest as the other formats' `call_…`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

import httpx

from . import sse
from .conversation import Conversation
from .wire import MESSAGES, Answer, Parsed, RequestError, json_body, pieces

ERROR_TYPES = {
    400: "invalid_request_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def _blocks(content: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list):
        raise RequestError(f"{where}.content must be a string or a list of blocks", "messages")
    return [b for b in content if isinstance(b, dict)]


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(b.get("text", "") for b in content or () if isinstance(b, dict))


def as_items(messages: list[Any]) -> list[dict[str, Any]]:
    """Messages as Responses API input items (the script's conversation form): a user
    message's tool results first (the API puts them first), then its text."""
    items: list[dict[str, Any]] = []
    for n, message in enumerate(messages):
        if not isinstance(message, dict):
            raise RequestError(f"messages[{n}] is not an object: {message!r}", "messages")
        role = message.get("role")
        blocks = _blocks(message.get("content"), f"messages[{n}]")
        text = "".join(b.get("text", "") for b in blocks if b.get("type") == "text")
        if role == "user":
            for block in blocks:
                if block.get("type") == "tool_result":
                    items.append(
                        {
                            "type": "function_call_output",
                            "call_id": block.get("tool_use_id", ""),
                            "output": _text(block.get("content")),
                        }
                    )
            if text:
                items.append({"role": "user", "content": text})
        elif role == "assistant":
            if text:
                items.append({"role": "assistant", "content": text})
            for block in blocks:
                if block.get("type") == "tool_use":
                    items.append(
                        {
                            "type": "function_call",
                            "call_id": block.get("id", ""),
                            "name": block.get("name", ""),
                            "arguments": json.dumps(block.get("input") or {}),
                        }
                    )
        else:
            raise RequestError(
                f"messages[{n}].role is {role!r}; the Messages API takes user and assistant "
                "(the system prompt is the top-level `system`)",
                "messages",
            )
    return items


def tool_use_id(call_id: str) -> str:
    return "toolu_" + call_id.removeprefix("call_")


def message_id(answer: Answer) -> str:
    return "msg_" + answer.id.removeprefix("resp_")


def _content(answer: Answer) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if answer.text:
        blocks.append({"type": "text", "text": answer.text})
    for call in answer.calls:
        blocks.append(
            {
                "type": "tool_use",
                "id": tool_use_id(call["call_id"]),
                "name": call["name"],
                "input": json.loads(call["arguments"]),
            }
        )
    return blocks


def _stop_reason(answer: Answer) -> str:
    return "tool_use" if answer.calls else "end_turn"


def message_body(answer: Answer) -> dict[str, Any]:
    return {
        "id": message_id(answer),
        "type": "message",
        "role": "assistant",
        "model": answer.model,
        "content": _content(answer),
        "stop_reason": _stop_reason(answer),
        "stop_sequence": None,
        "usage": {
            "input_tokens": answer.input_tokens,
            "output_tokens": answer.output_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
        },
    }


def stream_events(answer: Answer) -> list[bytes]:
    """message_start, then per block content_block_start / its deltas (text_delta,
    input_json_delta) / content_block_stop, then message_delta (the stop reason and
    the output tokens) and message_stop."""
    body = message_body(answer)
    start = {
        **body,
        "content": [],
        "stop_reason": None,
        "usage": {**body["usage"], "output_tokens": 1},
    }
    events: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    for index, block in enumerate(body["content"]):
        if block["type"] == "text":
            opened: dict[str, Any] = {"type": "text", "text": ""}
            deltas = [{"type": "text_delta", "text": p} for p in pieces(block["text"])]
        else:
            opened = {**block, "input": {}}
            text = json.dumps(block["input"])
            deltas = [{"type": "input_json_delta", "partial_json": p} for p in pieces(text)]
        events.append({"type": "content_block_start", "index": index, "content_block": opened})
        if index == 0:
            events.append({"type": "ping"})
        events += [{"type": "content_block_delta", "index": index, "delta": d} for d in deltas]
        events.append({"type": "content_block_stop", "index": index})
    events += [
        {
            "type": "message_delta",
            "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None},
            "usage": {"output_tokens": answer.output_tokens},
        },
        {"type": "message_stop"},
    ]
    return [sse.event(e, e["type"]) for e in events]


class MessagesFormat:
    """`POST …/v1/messages`, whole or streamed (`stream: true`)."""

    name = MESSAGES
    label = "Anthropic Messages API"
    path = re.compile(r".*/v1/messages$")

    def parse(self, body: dict[str, Any], load: Callable[[str], dict[str, Any] | None]) -> Parsed:
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise RequestError(f"messages must be a list, not {messages!r}", "messages")
        return Parsed(
            Conversation.from_input(as_items(messages)),
            model=str(body.get("model", "")),
            stream=bool(body.get("stream")),
        )

    def render(self, parsed: Parsed, answer: Answer, turn: int) -> httpx.Response:
        if parsed.stream:
            return sse.streamed(stream_events(answer), turn)
        return httpx.Response(200, json=message_body(answer))

    def error(self, status: int, message: str, param: str | None = None) -> httpx.Response:
        kind = ERROR_TYPES.get(status, "api_error")
        body = {"type": "error", "error": {"type": kind, "message": message}}
        return httpx.Response(
            status, content=json_body(body), headers={"content-type": "application/json"}
        )


__all__ = ["MessagesFormat", "as_items", "message_body", "stream_events", "tool_use_id"]
