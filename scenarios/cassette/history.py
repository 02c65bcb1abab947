"""A request's history in the one form a cassette keys replies by.

The same conversation reaches the model in each wire format's own shapes, and a resumed run
resends it with the ids the model gave its calls (a real provider's `call_…`, `toolu_…`), or
new ones when a re-asked turn came back with fresh ids. A history keeps what a model's
answer depends on and nothing a run or a transport chose: the system prompt (instructions,
system and developer messages), the names of the tools offered, and the conversation
(`Conversation.from_input`'s items) with every call id renamed by its order of first
appearance (`call-1`, `call-2`, …) and each call's arguments as canonical JSON (whole
numbers as integers, as a model's `1999.0` is `1999`). Two requests with equal histories
are the same question; the key is its hash.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..conversation import Call, Conversation
from ..wire import CHAT, MESSAGES, RESPONSES

Item = tuple[str, ...]


def whole(value: Any) -> Any:
    """`value` with every whole float as an int, at any depth (JSON's 1999.0 is 1999)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole(v) for v in value]
    return value


def _arguments(arguments: Mapping[str, Any]) -> str:
    return json.dumps(whole(dict(arguments)), sort_keys=True, ensure_ascii=False)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(p.get("text", "")) for p in content if isinstance(p, dict) and "text" in p
        )
    return ""


def system_of(wire: str, body: Mapping[str, Any], items: Sequence[Any]) -> str:
    """The request's system prompt: the Responses API's `instructions` and the system and
    developer messages of its input (`items`: after chaining), Chat Completions' system and
    developer messages, the Messages API's top-level `system`."""
    parts: list[str] = []
    if wire == MESSAGES:
        parts.append(_text(body.get("system")))
    else:
        if wire == RESPONSES and isinstance(body.get("instructions"), str):
            parts.append(body["instructions"])
        raw = body.get("messages") if wire == CHAT else items
        for item in raw or ():
            if isinstance(item, dict) and item.get("role") in ("system", "developer"):
                parts.append(_text(item.get("content")))
    return "\n\n".join(p for p in parts if p)


def tools_of(body: Mapping[str, Any]) -> tuple[str, ...]:
    """The names of the tools the request offers, sorted (a built-in tool by its type)."""
    names: set[str] = set()
    for tool in body.get("tools") or ():
        if not isinstance(tool, dict):
            continue
        function = tool.get("function")
        name = function.get("name") if isinstance(function, dict) else tool.get("name")
        names.add(str(name or tool.get("type") or "?"))
    return tuple(sorted(names))


def normalised(conversation: Conversation) -> tuple[Item, ...]:
    """The conversation's items with call ids renamed by first appearance."""
    names: dict[str, str] = {}

    def rename(call_id: str) -> str:
        return names.setdefault(call_id, f"call-{len(names) + 1}")

    found: list[Item] = []
    for item in conversation.items:
        kind = item[0]
        if kind == "call":
            call: Call = item[1]
            found.append(("call", rename(call.call_id), call.name, _arguments(call.arguments)))
        elif kind == "output":
            found.append(("output", rename(item[1]), item[2]))
        else:
            found.append((kind, item[1]))
    return tuple(found)


@dataclass(frozen=True)
class History:
    """What the model was asked: system prompt, tools offered, conversation (normalised)."""

    system: str
    tools: tuple[str, ...]
    items: tuple[Item, ...]

    @classmethod
    def of(
        cls, wire: str, body: Mapping[str, Any], conversation: Conversation, items: Sequence[Any]
    ) -> History:
        """The history of one parsed request (`items`: the Responses API input after
        chaining; the other formats' are in `body`)."""
        return cls(system_of(wire, body, items), tools_of(body), normalised(conversation))

    def key(self) -> str:
        text = json.dumps(self.to_json(), sort_keys=True, ensure_ascii=True)
        return hashlib.sha256(text.encode()).hexdigest()

    @property
    def turn(self) -> int:
        """The model turn it asks for (1-based, over the session), as the scripted model
        counts it: one more than the model turns it holds."""
        return Conversation(tuple(_as_conversation_item(i) for i in self.items)).model_turn

    def to_json(self) -> dict[str, Any]:
        return {
            "system": self.system,
            "tools": list(self.tools),
            "items": [list(i) for i in self.items],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> History:
        items = data.get("items")
        if not isinstance(items, list) or not all(
            isinstance(i, list) and i and all(isinstance(p, str) for p in i) for i in items
        ):
            raise ValueError("history.items must be a list of lists of strings")
        tools = data.get("tools") or []
        if not isinstance(tools, list) or not all(isinstance(t, str) for t in tools):
            raise ValueError("history.tools must be a list of names")
        return cls(str(data.get("system") or ""), tuple(tools), tuple(tuple(i) for i in items))

    def lines(self) -> list[str]:
        """One line per part, as a person reads it: the system prompt, the tools, then each
        item (`user: …`, `assistant: …`, `call call-1 search({...})`, `output call-1: …`)."""
        found = [f"system: {self.system}" if self.system else "system: (none)"]
        found.append(f"tools: {', '.join(self.tools) if self.tools else '(none)'}")
        found += [line_of(i) for i in self.items]
        return found

    def departs_at(self, other: History) -> int:
        """The index in `lines()` of the first line where this history and `other` differ
        (the length of the shorter when one begins the other)."""
        mine, theirs = self.lines(), other.lines()
        for n, (a, b) in enumerate(zip(mine, theirs, strict=False)):
            if a != b:
                return n
        return min(len(mine), len(theirs))


def line_of(item: Item) -> str:
    kind = item[0]
    if kind == "call":
        return f"call {item[1]} {item[2]}({item[3]})"
    if kind == "output":
        return f"output {item[1]}: {item[2]}"
    return f"{kind}: {item[1]}"


def _as_conversation_item(item: Item) -> tuple[Any, ...]:
    if item[0] == "call":
        return ("call", Call(item[1], item[2], json.loads(item[3])))
    return tuple(item)


def nearest(history: History, recorded: Iterable[History]) -> tuple[int, History] | None:
    """The recorded history that shares the longest beginning with `history` (the earliest
    of equals), with its index; None when nothing was recorded."""
    best: tuple[int, int, History] | None = None
    for n, other in enumerate(recorded):
        shared = history.departs_at(other)
        if best is None or shared > best[0]:
            best = (shared, n, other)
    return (best[1], best[2]) if best is not None else None


__all__ = ["History", "line_of", "nearest", "normalised", "system_of", "tools_of", "whole"]
