"""OpenAI Chat Completions (`POST /v1/chat/completions`): what the openai SDK's
`chat.completions`, LiteLLM and every OpenAI-compatible client send.

The history is `messages`: system and developer messages (not conversation), user
messages, assistant messages with `content` and `tool_calls`, and `tool` messages that
answer a call by `tool_call_id`. Read into the script's conversation form, the same
conversation gets the same reply and the same call ids as through the Responses API.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import httpx

from . import sse
from .conversation import Conversation
from .wire import CHAT, Answer, Parsed, RequestError, openai_error, pieces

CREATED = 1_700_000_000


def as_items(messages: list[Any]) -> list[dict[str, Any]]:
    """Chat messages as Responses API input items (the script's conversation form)."""
    items: list[dict[str, Any]] = []
    for n, message in enumerate(messages):
        if not isinstance(message, dict):
            raise RequestError(f"messages[{n}] is not an object: {message!r}", "messages")
        role = message.get("role")
        if role == "tool":
            if "tool_call_id" not in message:
                raise RequestError(f"messages[{n}]: a tool message needs tool_call_id", "messages")
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message["tool_call_id"],
                    "output": message.get("content") or "",
                }
            )
        elif role == "assistant":
            if message.get("content"):
                items.append({"role": "assistant", "content": message["content"]})
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                items.append(
                    {
                        "type": "function_call",
                        "call_id": call.get("id", ""),
                        "name": function.get("name", ""),
                        "arguments": function.get("arguments") or "{}",
                    }
                )
        elif role == "user":
            items.append({"role": "user", "content": message.get("content")})
        # system / developer messages are instructions, not conversation
    return items


def _message(answer: Answer) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": answer.text,
        "refusal": None,
        "annotations": [],
    }
    if answer.calls:
        message["tool_calls"] = [
            {
                "id": call["call_id"],
                "type": "function",
                "function": {"name": call["name"], "arguments": call["arguments"]},
            }
            for call in answer.calls
        ]
    return message


def _finish_reason(answer: Answer) -> str:
    return "tool_calls" if answer.calls else "stop"


def _usage(answer: Answer) -> dict[str, Any]:
    return {
        "prompt_tokens": answer.input_tokens,
        "completion_tokens": answer.output_tokens,
        "total_tokens": answer.input_tokens + answer.output_tokens,
        "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0},
    }


def completion_id(answer: Answer) -> str:
    """`chatcmpl-…`, from the same digest as the Responses API's response id."""
    return "chatcmpl-" + answer.id.removeprefix("resp_")


def completion_body(answer: Answer) -> dict[str, Any]:
    return {
        "id": completion_id(answer),
        "object": "chat.completion",
        "created": CREATED,
        "model": answer.model,
        "choices": [
            {
                "index": 0,
                "message": _message(answer),
                "logprobs": None,
                "finish_reason": _finish_reason(answer),
            }
        ],
        "usage": _usage(answer),
        "service_tier": "default",
        "system_fingerprint": None,
    }


def stream_chunks(answer: Answer, include_usage: bool) -> list[bytes]:
    """The answer as `chat.completion.chunk` events: the role, the text's deltas, each
    call's id and name then its arguments' deltas, the finish reason; with
    `include_usage` every chunk carries `usage: null` and one more chunk (no choices)
    carries the usage; then `data: [DONE]`."""
    head = {
        "id": completion_id(answer),
        "object": "chat.completion.chunk",
        "created": CREATED,
        "model": answer.model,
        "service_tier": "default",
        "system_fingerprint": None,
    }
    if include_usage:
        head["usage"] = None

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        choice = {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}
        return {**head, "choices": [choice]}

    chunks = [chunk({"role": "assistant", "content": "" if answer.text else None})]
    if answer.text:
        chunks += [chunk({"content": piece}) for piece in pieces(answer.text)]
    for index, call in enumerate(answer.calls):
        opened = {
            "index": index,
            "id": call["call_id"],
            "type": "function",
            "function": {"name": call["name"], "arguments": ""},
        }
        chunks.append(chunk({"tool_calls": [opened]}))
        chunks += [
            chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
            for piece in pieces(call["arguments"])
        ]
    chunks.append(chunk({}, _finish_reason(answer)))
    if include_usage:
        chunks.append({**head, "choices": [], "usage": _usage(answer)})
    return [*(sse.event(c) for c in chunks), sse.event("[DONE]")]


class ChatCompletionsFormat:
    """`POST …/chat/completions`, whole or streamed (`stream: true`)."""

    name = CHAT
    label = "OpenAI Chat Completions"
    path = re.compile(r".*/chat/completions$")

    def parse(self, body: dict[str, Any], load: Callable[[str], dict[str, Any] | None]) -> Parsed:
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise RequestError(f"messages must be a list, not {messages!r}", "messages")
        options = body.get("stream_options") or {}
        return Parsed(
            Conversation.from_input(as_items(messages)),
            model=str(body.get("model", "")),
            stream=bool(body.get("stream")),
            include_usage=bool(options.get("include_usage")),
        )

    def render(self, parsed: Parsed, answer: Answer, turn: int) -> httpx.Response:
        if parsed.stream:
            return sse.streamed(stream_chunks(answer, parsed.include_usage), turn)
        return httpx.Response(200, json=completion_body(answer))

    def error(self, status: int, message: str, param: str | None = None) -> httpx.Response:
        return openai_error(status, message, param)


__all__ = ["ChatCompletionsFormat", "as_items", "completion_body", "stream_chunks"]
