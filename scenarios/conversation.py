"""The conversation a scripted model sees: Responses API input items, normalised.

Runtimes send the same conversation in different shapes (content as a string or
as parts, output items echoed back with ids and statuses, instructions as a
system message, or chained with previous_response_id). The scripted model must
answer the same conversation the same way, so it reads only what matters: user
text, assistant text, function calls and their outputs, in order.
"""

from __future__ import annotations

import functools
import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any


def canonical_arguments(arguments: str | dict[str, Any]) -> str:
    data = json.loads(arguments) if isinstance(arguments, str) else arguments
    return json.dumps(data, sort_keys=True, ensure_ascii=True, separators=(",", ":"))


def _text(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    parts: list[str] = []
    for part in content:
        if isinstance(part, str):
            parts.append(part)
        elif part.get("type") in ("input_text", "output_text", "text"):
            parts.append(part.get("text", ""))
    return "".join(parts)


@dataclass(frozen=True)
class Call:
    """A function call as the model made it."""

    call_id: str
    name: str
    arguments: dict[str, Any]


@dataclass(frozen=True)
class Turn:
    """One model turn of the conversation and what came back for its calls."""

    text: str | None
    calls: tuple[Call, ...]
    outputs: dict[str, str] = field(default_factory=dict)  # call_id -> output

    def output_of(self, call: Call) -> str | None:
        return self.outputs.get(call.call_id)


def _returned(output: str | None) -> str | None:
    """A tool's output as the tool returned it. ADK hands a function's plain return value
    to the model as JSON, `{"result": value}` (LiteLLM sends that text as the tool
    message): the script reads the value, as every other runtime sends it."""
    if not output or not output.startswith('{"result"'):
        return output
    try:
        data = json.loads(output)
    except ValueError:
        return output
    if not isinstance(data, dict) or set(data) != {"result"}:
        return output
    value = data["result"]
    return value if isinstance(value, str) else json.dumps(value)


@dataclass(frozen=True)
class Conversation:
    """Normalised items: ("user", text) | ("assistant", text) | ("call", Call) | ("output", id, text)."""

    items: tuple[tuple[Any, ...], ...]

    @classmethod
    def from_input(cls, raw: Iterable[Any]) -> Conversation:
        items: list[tuple[Any, ...]] = []
        for item in raw:
            if isinstance(item, str):
                items.append(("user", item))
                continue
            kind = item.get("type")
            role = item.get("role")
            if kind == "function_call":
                args = json.loads(canonical_arguments(item.get("arguments") or "{}"))
                items.append(("call", Call(item["call_id"], item["name"], args)))
            elif kind == "function_call_output":
                output = item.get("output")
                items.append(("output", item["call_id"], _returned(_text(output))))
            elif role == "user":
                items.append(("user", _text(item.get("content"))))
            elif role == "assistant":
                text = _text(item.get("content"))
                if text:
                    items.append(("assistant", text))
            # system / developer messages and reasoning items are not conversation
        return cls(tuple(items))

    def extend(self, raw: Iterable[Any]) -> Conversation:
        return Conversation(self.items + Conversation.from_input(raw).items)

    # -- views the scripts use -------------------------------------------------------

    @property
    def user_inputs(self) -> list[str]:
        return [i[1] for i in self.items if i[0] == "user"]

    @property
    def last_user(self) -> str:
        inputs = self.user_inputs
        return inputs[-1] if inputs else ""

    def turns(self, *, since_last_user: bool = True) -> list[Turn]:
        """Model turns (in order), by default those after the latest user message."""
        items: Sequence[tuple[Any, ...]] = self.items
        if since_last_user:
            last = max((n for n, i in enumerate(items) if i[0] == "user"), default=-1)
            items = items[last + 1 :]
        turns: list[Turn] = []
        text: str | None = None
        calls: list[Call] = []
        outputs: dict[str, str] = {}

        def close() -> None:
            nonlocal text, calls, outputs
            if text is not None or calls:
                turns.append(Turn(text, tuple(calls), outputs))
            text, calls, outputs = None, [], {}

        for item in items:
            if item[0] == "assistant":
                if calls:
                    close()
                text = item[1]
            elif item[0] == "call":
                if outputs:
                    close()
                calls.append(item[1])
            elif item[0] == "output":
                outputs[item[1]] = item[2]
            else:
                close()
        close()
        return turns

    @property
    def model_turn(self) -> int:
        """1-based number of the turn being asked for, counted over the whole session."""
        return 1 + len(self._all_turns())

    def _all_turns(self) -> list[Turn]:
        return self.turns(since_last_user=False)

    @functools.cached_property
    def _source(self) -> str:
        return json.dumps(
            [[getattr(x, "__dict__", x) for x in item] for item in self.items],
            sort_keys=True,
            ensure_ascii=True,
        )

    def digest_source(self) -> str:
        """The conversation as canonical JSON text (computed once: a reply needs it thrice)."""
        return self._source

    def digest(self) -> str:
        """Stable hash of the conversation: the seed of every id in the reply."""
        return hashlib.sha256(self._source.encode()).hexdigest()
