"""A cassette as the scripted model's replies: each request answered with the reply the
recording got for the same history, offline, by the scripted model (so gates, faults,
streams held or cut, chained responses and behaviours work as for any scenario).

A request whose history the recording never saw has no reply. That is not a harness
error: the resumed run asked the model something the uninterrupted run never did. The
model answers it with an error in the request's format (400: no model would answer for
the recording), and writes the miss to UNRECORDED_LOG in its state folder, with the
history asked and the recorded history nearest to it, for the judge to report.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from killpoint.redaction import redact_tree, replacer, secret_forms

from ..conversation import Conversation
from ..script import Reply
from ..sse import Chunks
from ..wire import Parsed, WireFormat
from .file import Cassette, Interaction
from .history import History, nearest, normalised
from .redact import REDACTED
from .replies import Said

UNRECORDED_LOG = "unrecorded.log"


@dataclass(frozen=True)
class Found:
    interaction: Interaction
    said: Said


class Replayer:
    """Replies by history from one cassette. Called as a script (`replayer(conversation)`),
    it gives the recorded reply for a conversation whatever its system prompt and tools."""

    def __init__(self, cassette: Cassette, source: str = "") -> None:
        self.cassette = cassette
        self.source = source  # where it was read from, for messages
        self._by_key = cassette.replies()
        self._by_items: dict[tuple[Any, ...], list[Interaction]] = {}
        for interactions in self._by_key.values():
            for i in interactions:
                self._by_items.setdefault(i.history.items, []).append(i)
        self._histories = [i.history for i in cassette.interactions]
        self._asked: Counter[str] = Counter()
        # The recording wrote REDACTED for every secret of its environment; a request
        # that carries one again (a tool's result, a prompt) is read the same way.
        # None when the environment holds none: no copy of every request's body for nothing.
        self._secrets = replacer((), REDACTED) if secret_forms() else None

    def __repr__(self) -> str:
        return f"Replayer({self.source or self.cassette.name!r})"

    # -- as a script ----------------------------------------------------------------------

    def __call__(self, conversation: Conversation) -> Reply:
        found = self._by_items.get(normalised(conversation))
        if not found or found[0].said is None:
            raise LookupError("the cassette holds no reply for this conversation")
        return found[0].said.reply()

    # -- as the scripted model's source ---------------------------------------------------

    def history(self, wire: WireFormat, body: dict[str, Any], parsed: Parsed, load: Any) -> History:
        """The request's history, read after the cassette's redactions (as it was read
        when recorded)."""
        redacted, changed = self.cassette.redactions.body(body)
        if self._secrets is not None:
            masked = redact_tree(redacted, self._secrets)
            if masked != redacted:
                redacted, changed = masked, True
        if changed:
            parsed = wire.parse(redacted, load)
        return History.of(wire.name, redacted, parsed.conversation, parsed.items)

    def find(self, history: History) -> Found | None:
        """The recorded reply to `history`; a history recorded more than once gets its
        replies in the order recorded, the last again after that (within one process)."""
        key = history.key()
        recorded = self._by_key.get(key)
        if not recorded:
            return None
        n = min(self._asked[key], len(recorded) - 1)
        self._asked[key] += 1
        interaction = recorded[n]
        assert interaction.said is not None
        return Found(interaction, interaction.said)

    def miss(self, history: History, turn: int, wire: str) -> dict[str, Any]:
        """What the miss log says of a request the recording never saw."""
        near = nearest(history, self._histories)
        line: dict[str, Any] = {
            "turn": turn,
            "pid": os.getpid(),
            "format": wire,
            "history": history.to_json(),
            "nearest": None,
            "at": 0,
        }
        if near is not None:
            index, recorded = near
            line["nearest"] = {
                "index": index,
                "turn": self.cassette.interactions[index].turn,
                "history": recorded.to_json(),
            }
            line["at"] = history.departs_at(recorded)
        return line

    def miss_message(self, miss: dict[str, Any]) -> str:
        lines = History.from_json(miss["history"]).lines()
        at = miss["at"]
        where = lines[at] if at < len(lines) else "(its end)"
        return (
            f"killpoint cassette {self.source or self.cassette.name}: the recording never saw "
            f"this conversation (model turn {miss['turn']}); it departs from the nearest "
            f"recorded one at line {at + 1}: {where[:300]}"
        )


def verbatim(interaction: Interaction, turn: int) -> httpx.Response:
    """The recorded response as the provider sent it: its status, its headers (those a
    cassette keeps), its bytes; a stream event by event, each chunk behind its gate."""
    response = interaction.response
    headers = dict(response.headers)
    if response.events is not None:
        headers.setdefault("content-type", "text/event-stream; charset=utf-8")
        chunks = [e.encode() for e in response.events]
        return httpx.Response(response.status, headers=headers, stream=Chunks(chunks, turn))
    headers.setdefault("content-type", "application/json")
    return httpx.Response(response.status, headers=headers, content=(response.body or "").encode())


def serves_verbatim(interaction: Interaction, wire: str, stream: bool) -> bool:
    """A recorded response is served as it was to a request of its own format and kind
    (whole or streamed); any other is rendered from what the model said."""
    return interaction.format == wire and interaction.stream == stream


def unrecorded(state_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every request of a model state folder that the cassette had no reply for, in
    order (a line torn by a kill is skipped)."""
    try:
        text = (Path(state_dir) / UNRECORDED_LOG).read_text()
    except FileNotFoundError:
        return []
    found = []
    for line in text.splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            continue
    return found


def miss_lines(miss: dict[str, Any]) -> tuple[list[str], list[str]]:
    """(the nearest recorded history's lines, the history asked's lines) of a miss."""
    asked = History.from_json(miss["history"]).lines()
    near = miss.get("nearest")
    recorded = History.from_json(near["history"]).lines() if near else []
    return recorded, asked


__all__ = [
    "UNRECORDED_LOG",
    "Found",
    "Replayer",
    "miss_lines",
    "serves_verbatim",
    "unrecorded",
    "verbatim",
]
