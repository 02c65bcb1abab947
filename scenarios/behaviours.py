"""How the scripted model answers a turn it is asked again after a crash.

A real model asked the same turn twice does not repeat itself byte for byte. A runtime that
lost a turn's reply in a crash asks again, and what comes back may carry the same intended
calls under new call ids, in another order, spelled differently, or another plan. Each
behaviour below is one of those differences alone, so that a cell says which assumption a
runtime makes:

  regenerate-ids  the same calls, with fresh call ids and a fresh response id
  reorder         the same calls (same ids) in another order within their batch
  respell         the same calls, their argument text re-serialised: keys in another order,
                  other whitespace, whole numbers written as floats (1999 -> 1999.0)
  replan          the scenario's declared alternative for a call (`Scenario.replan`: per
                  tool, its arguments reworded), e.g. the same lookup with another query

A behaviour touches only a re-asked turn (the model had served that very conversation to
another process); the first pass of every turn is the script's, so a baseline stays the
baseline. What it does is a function of (behaviour, conversation, how many times that turn
was re-asked before): a cell replays exactly.
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .conversation import Conversation
from .script import Reply, ToolRequest

BEHAVIOURS: tuple[str, ...] = ("regenerate-ids", "reorder", "respell", "replan")

# A scenario's alternative plan: per tool, the arguments a model that re-plans would send
# instead (the same intent, other words). Tools without one are re-issued as they were.
Replan = Mapping[str, Callable[[dict[str, Any]], dict[str, Any]]]


class UnknownBehaviour(ValueError):
    """A model behaviour that is not one of BEHAVIOURS."""


def check(name: str) -> str:
    if name not in BEHAVIOURS:
        raise UnknownBehaviour(
            f"scenarios: model behaviour {name!r} is unknown; choose one of {', '.join(BEHAVIOURS)}"
        )
    return name


@dataclass(frozen=True)
class Regenerated:
    """A re-asked turn's reply as the behaviour shapes it for the HTTP layer."""

    reply: Reply
    order: tuple[int, ...]  # reply.calls[n] is the script's call order[n] (ids follow it)
    salt: str | None  # None: the first pass's ids; else ids are drawn from this
    arguments: tuple[str, ...] | None  # argument text per call, None: canonical JSON


def seed_of(name: str, conversation: Conversation, asked_before: int) -> str:
    return hashlib.sha256(f"{name}/{conversation.digest()}/{asked_before}".encode()).hexdigest()


def regenerate(
    name: str,
    conversation: Conversation,
    reply: Reply,
    asked_before: int,
    replan: Replan | None = None,
) -> Regenerated:
    """What the model answers when asked `conversation` again (`asked_before` times so far)."""
    seed = seed_of(check(name), conversation, asked_before)
    identity = tuple(range(len(reply.calls)))
    if name == "regenerate-ids":
        return Regenerated(reply, identity, seed, None)
    if name == "reorder":
        order = _another_order(len(reply.calls), seed)
        calls = tuple(reply.calls[n] for n in order)
        return Regenerated(Reply(calls=calls, text=reply.text), order, None, None)
    if name == "respell":
        rng = random.Random(seed)
        texts = tuple(respelled(c.arguments, rng) for c in reply.calls)
        return Regenerated(reply, identity, None, texts)
    alternatives = replan or {}
    calls = tuple(
        ToolRequest(c.name, alternatives[c.name](dict(c.arguments)))
        if c.name in alternatives
        else c
        for c in reply.calls
    )
    return Regenerated(Reply(calls=calls, text=reply.text), identity, None, None)


def _another_order(n: int, seed: str) -> tuple[int, ...]:
    """A rotation other than none (every call moves) for n >= 2; one call stays put."""
    if n < 2:
        return tuple(range(n))
    shift = 1 + int(seed[:8], 16) % (n - 1)
    return tuple((k + shift) % n for k in range(n))


def respelled(arguments: dict[str, Any], rng: random.Random) -> str:
    """The same arguments as other JSON text: keys reversed, spaced out, whole numbers as
    floats. Equal to the original once parsed (numbers compare equal), unequal as text."""
    floated = {k: _as_float(v) for k, v in reversed(list(arguments.items()))}
    indent = rng.choice((None, 1, 2))
    separators = (" , ", " : ") if indent is None else (",", ": ")
    return json.dumps(floated, indent=indent, separators=separators, ensure_ascii=True)


def _as_float(value: Any) -> Any:
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return float(value)
    if isinstance(value, dict):
        return {k: _as_float(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_float(v) for v in value]
    return value


__all__ = [
    "BEHAVIOURS",
    "Regenerated",
    "Replan",
    "UnknownBehaviour",
    "check",
    "regenerate",
    "respelled",
]
