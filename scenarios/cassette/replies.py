"""A recorded reply read back: what the model said (its text, its calls with their ids, its
usage), whole or put together from the events of a stream, in any wire format; and that
reply rendered again, for a turn a behaviour answers otherwise or a request in another
format than the recording's.

The bytes a provider sent are served as they were (replay.py); what is here is only for
the replies that cannot be: a re-asked turn with fresh ids, another order, other spellings
(behaviours.py), and a reply asked for in another format or whole instead of streamed.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..behaviours import Regenerated
from ..script import Reply, ToolRequest
from ..wire import CHAT, MESSAGES, RESPONSES, Answer


class ReplyError(ValueError):
    """A recorded reply that is not one its format's API sends."""


def sse_data(events: Sequence[str]) -> list[Any]:
    """The JSON `data:` of each server-sent event (a `[DONE]` line and comments skipped)."""
    found: list[Any] = []
    for event in events:
        lines = [line[5:].lstrip() for line in event.splitlines() if line.startswith("data:")]
        data = "\n".join(lines)
        if not data or data == "[DONE]":
            continue
        try:
            found.append(json.loads(data))
        except ValueError as exc:
            raise ReplyError(f"a streamed event's data is not JSON: {data[:200]!r}") from exc
    return found


_EVENT_END = re.compile(r"\r\n\r\n|\n\n|\r\r")


def split_events(text: str) -> list[str]:
    """A stream's text as its events, each with the blank line that ends it; joined, they
    are the text again, byte for byte (a stream cut before its last blank line keeps
    what came)."""
    events: list[str] = []
    at = 0
    for m in _EVENT_END.finditer(text):
        events.append(text[at : m.end()])
        at = m.end()
    if at < len(text):
        events.append(text[at:])
    return events


@dataclass(frozen=True)
class Said:
    """One recorded reply, in the Responses API's output items (every format's replies are
    rendered from them), with its ids and usage as the provider gave them."""

    response_id: str
    model: str
    output: tuple[dict[str, Any], ...]
    input_tokens: int
    output_tokens: int

    @property
    def text(self) -> str | None:
        texts = [
            str(part.get("text", ""))
            for item in self.output
            if item.get("type") == "message"
            for part in item.get("content") or ()
            if isinstance(part, dict) and "text" in part
        ]
        return "".join(texts) if texts else None

    @property
    def calls(self) -> list[dict[str, Any]]:
        return [item for item in self.output if item.get("type") == "function_call"]

    def reply(self) -> Reply:
        """The reply in a script's form (what behaviours reshape)."""
        calls = tuple(ToolRequest(c["name"], _parsed(c.get("arguments"))) for c in self.calls)
        return Reply(calls=calls, text=self.text)

    def summary(self) -> dict[str, Any]:
        """What a person reading the cassette looks for: the text, the calls, the usage."""
        return {
            "text": self.text,
            "calls": [
                {
                    "call_id": c.get("call_id"),
                    "name": c.get("name"),
                    "arguments": c.get("arguments"),
                }
                for c in self.calls
            ],
            "usage": {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens},
        }

    @property
    def answer_id(self) -> str:
        """The id an Answer carries (`resp_…`): each format derives its own from it."""
        core = self.response_id
        for prefix in ("resp_", "chatcmpl-", "msg_"):
            core = core.removeprefix(prefix)
        return f"resp_{core}"

    def answer(self, regenerated: Regenerated | None = None) -> Answer:
        """The reply as a format renders it; with `regenerated`, as the behaviour reshaped
        it: the recorded calls in its order, fresh ids from its salt, its spellings, its
        arguments (replan). A reshaped reply's output tokens are the recording's scaled by
        its length, as a tokenizer's count would follow the text."""
        calls = self.calls
        salt = regenerated.salt if regenerated is not None else None
        items: list[dict[str, Any]] = []
        text = self.text
        if text is not None:
            message = next(i for i in self.output if i.get("type") == "message")
            items.append(
                {
                    "type": "message",
                    "id": _fresh("msg", salt, "message") if salt else message.get("id", "msg_0"),
                    "role": "assistant",
                    "status": "completed",
                    "content": [{"type": "output_text", "text": text, "annotations": []}],
                }
            )
        wanted = regenerated.reply.calls if regenerated is not None else self.reply().calls
        for position, call in enumerate(wanted):
            index = regenerated.order[position] if regenerated is not None else position
            recorded = calls[index]
            texts = regenerated.arguments if regenerated is not None else None
            if texts is not None:
                arguments = texts[position]
            elif call.arguments == _parsed(recorded.get("arguments")):
                arguments = str(recorded.get("arguments") or "{}")
            else:  # replanned: other arguments
                arguments = json.dumps(call.arguments, sort_keys=True, ensure_ascii=True)
            items.append(
                {
                    "type": "function_call",
                    "id": _fresh("fc", salt, index) if salt else recorded.get("id", f"fc_{index}"),
                    "call_id": _fresh("call", salt, index) if salt else recorded["call_id"],
                    "name": call.name,
                    "arguments": arguments,
                    "status": "completed",
                }
            )
        tokens = self.output_tokens
        if regenerated is not None:
            before = len(json.dumps([*self._said_items()]))
            tokens = max(1, round(tokens * len(json.dumps(items)) / max(1, before)))
        return Answer(
            id=_fresh("resp", salt, "response") if salt else self.answer_id,
            model=self.model,
            output=items,
            input_tokens=self.input_tokens,
            output_tokens=tokens,
        )

    def _said_items(self) -> list[dict[str, Any]]:
        return [i for i in self.output if i.get("type") in ("message", "function_call")]


def _fresh(prefix: str, salt: str | None, part: object) -> str:
    return f"{prefix}_{hashlib.sha256(f'{salt}/{part}'.encode()).hexdigest()[:24]}"


def _parsed(arguments: Any) -> dict[str, Any]:
    if isinstance(arguments, dict):
        return arguments
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# -- reading each format --------------------------------------------------------------------


def read(wire: str, body: str | None, events: Sequence[str] | None) -> Said:
    """What the model said in a recorded reply: a whole body, or a stream's events."""
    try:
        if events is not None:
            return _STREAMED[wire](sse_data(events))
        if body is None:
            raise ReplyError("a reply needs a body or events")
        data = json.loads(body)
        if not isinstance(data, dict):
            raise ReplyError("the body is not a JSON object")
        return _WHOLE[wire](data)
    except ReplyError:
        raise
    except (ValueError, KeyError, TypeError, AttributeError, IndexError) as exc:
        raise ReplyError(f"not a {wire} reply: {type(exc).__name__}: {exc}") from exc


def _usage(data: Any, inp: str, out: str) -> tuple[int, int]:
    usage = data if isinstance(data, dict) else {}
    return int(usage.get(inp) or 0), int(usage.get(out) or 0)


def _responses(data: Mapping[str, Any]) -> Said:
    tokens = _usage(data.get("usage"), "input_tokens", "output_tokens")
    output = tuple(i for i in data.get("output") or () if isinstance(i, dict))
    return Said(str(data.get("id") or ""), str(data.get("model") or ""), output, *tokens)


def _responses_stream(events: list[Any]) -> Said:
    for event in reversed(events):
        if event.get("type") in ("response.completed", "response.incomplete"):
            return _responses(event["response"])
    # A stream without its last event: what its items' `done` events said.
    done = [e["item"] for e in events if e.get("type") == "response.output_item.done"]
    head: dict[str, Any] = next(
        (e["response"] for e in events if e.get("type") == "response.created"), {}
    )
    return _responses({**head, "output": done})


def _items(
    message_id: str, text: str | None, calls: list[tuple[str, str, str]]
) -> tuple[dict[str, Any], ...]:
    items: list[dict[str, Any]] = []
    if text:
        items.append(
            {
                "type": "message",
                "id": message_id,
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    for call_id, name, arguments in calls:
        items.append(
            {
                "type": "function_call",
                "id": "fc_" + call_id.removeprefix("call_"),
                "call_id": call_id,
                "name": name,
                "arguments": arguments,
                "status": "completed",
            }
        )
    return tuple(items)


def _chat(data: Mapping[str, Any]) -> Said:
    message = (data.get("choices") or [{}])[0].get("message") or {}
    calls = [
        (
            str(c.get("id", "")),
            str(c["function"]["name"]),
            str(c["function"].get("arguments") or "{}"),
        )
        for c in message.get("tool_calls") or ()
    ]
    rid = str(data.get("id") or "")
    output = _items("msg_" + rid.removeprefix("chatcmpl-"), message.get("content"), calls)
    tokens = _usage(data.get("usage"), "prompt_tokens", "completion_tokens")
    return Said(rid, str(data.get("model") or ""), output, *tokens)


def _chat_stream(events: list[Any]) -> Said:
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    head: dict[str, Any] = {}
    usage: Any = None
    for chunk in events:
        head = head or chunk
        if chunk.get("usage"):
            usage = chunk["usage"]
        for choice in chunk.get("choices") or ():
            delta = choice.get("delta") or {}
            if delta.get("content"):
                text.append(delta["content"])
            for call in delta.get("tool_calls") or ():
                slot = calls.setdefault(
                    int(call.get("index", 0)), {"id": "", "name": "", "arguments": ""}
                )
                slot["id"] = call.get("id") or slot["id"]
                function = call.get("function") or {}
                slot["name"] = function.get("name") or slot["name"]
                slot["arguments"] += function.get("arguments") or ""
    message = {
        "content": "".join(text) or None,
        "tool_calls": [
            {"id": c["id"], "function": {"name": c["name"], "arguments": c["arguments"]}}
            for _, c in sorted(calls.items())
        ],
    }
    return _chat(
        {
            "id": head.get("id"),
            "model": head.get("model"),
            "choices": [{"message": message}],
            "usage": usage,
        }
    )


def _messages(data: Mapping[str, Any]) -> Said:
    text = "".join(b.get("text", "") for b in data.get("content") or () if b.get("type") == "text")
    calls = [
        (
            "call_" + str(b.get("id", "")).removeprefix("toolu_"),
            str(b["name"]),
            json.dumps(b.get("input") or {}),
        )
        for b in data.get("content") or ()
        if b.get("type") == "tool_use"
    ]
    rid = str(data.get("id") or "")
    tokens = _usage(data.get("usage"), "input_tokens", "output_tokens")
    return Said(rid, str(data.get("model") or ""), _items(rid, text or None, calls), *tokens)


def _messages_stream(events: list[Any]) -> Said:
    message: dict[str, Any] = {}
    blocks: dict[int, dict[str, Any]] = {}
    partial: dict[int, str] = {}
    output_tokens: int | None = None
    for event in events:
        kind = event.get("type")
        if kind == "message_start":
            message = dict(event["message"])
        elif kind == "content_block_start":
            blocks[int(event["index"])] = dict(event["content_block"])
        elif kind == "content_block_delta":
            block = blocks[int(event["index"])]
            delta = event["delta"]
            if delta.get("type") == "text_delta":
                block["text"] = block.get("text", "") + delta.get("text", "")
            elif delta.get("type") == "input_json_delta":
                partial[int(event["index"])] = partial.get(int(event["index"]), "") + delta.get(
                    "partial_json", ""
                )
        elif kind == "message_delta":
            output_tokens = (event.get("usage") or {}).get("output_tokens", output_tokens)
    for index, text in partial.items():
        blocks[index]["input"] = json.loads(text) if text else {}
    usage = dict(message.get("usage") or {})
    if output_tokens is not None:
        usage["output_tokens"] = output_tokens
    content = [blocks[i] for i in sorted(blocks)]
    return _messages({**message, "content": content, "usage": usage})


_WHOLE = {RESPONSES: _responses, CHAT: _chat, MESSAGES: _messages}
_STREAMED = {RESPONSES: _responses_stream, CHAT: _chat_stream, MESSAGES: _messages_stream}

__all__ = ["ReplyError", "Said", "read", "split_events", "sse_data"]
