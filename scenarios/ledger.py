"""The ledger: an append-only file of every tool execution that really happened.

It lives outside the runtime's store, so it tells what a crash lost or repeated.
Each record is one JSON line written with a single O_APPEND write before the tool's
effect counts. Once write() returns, the line is in the kernel's page cache: a
SIGKILL of the writer cannot take it back, and every reader sees it. (No fsync: it
would guard only against losing the machine, which killpoint does not simulate, and
it cost a disk flush per record, two per tool call.) A torn last line, if any, is
ignored on read.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from . import history
from .conversation import canonical_arguments
from .own_writes import own_write


@dataclass(frozen=True)
class Entry:
    scenario: str
    tool: str
    arguments: str  # canonical JSON
    key: str | None  # idempotency key, when the runtime gave one
    phase: str  # "started" | "finished"
    effect: bool  # False when an idempotent tool saw its key again and did nothing
    pid: int
    at: float
    # What the effect is, as the tool declares it (tooling.intent): canonical JSON of the
    # arguments that identify it. None: every argument does.
    intent: str | None = None

    @property
    def signature(self) -> tuple[str, str]:
        """The call: (tool, canonical arguments)."""
        return (self.tool, self.arguments)

    @property
    def effect_signature(self) -> tuple[str, str]:
        """The effect: (tool, intent) when the tool declares one, else the call. Two calls
        spelled differently with one intent (a reworded body, 1999 as 1999.0) are one
        effect done twice."""
        return (self.tool, self.intent) if self.intent is not None else self.signature


class Ledger:
    def __init__(self, path: str | os.PathLike[str], scenario: str) -> None:
        self.path = Path(path)
        self.scenario = scenario

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r})"

    def record(
        self,
        tool: str,
        arguments: str | dict[str, Any],
        *,
        phase: str,
        key: str | None = None,
        effect: bool = True,
        intent: str | None = None,
    ) -> None:
        record = {
            "scenario": self.scenario,
            "tool": tool,
            "arguments": canonical_arguments(arguments),
            "key": key,
            "phase": phase,
            "effect": effect,
            "pid": os.getpid(),
            "at": time.time(),
        }
        if intent is not None:  # last: every record still begins with _RECORD_START
            record["intent"] = intent
        line = json.dumps(record, ensure_ascii=True)
        with own_write("the ledger"):
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                os.write(fd, (line + "\n").encode())
            finally:
                os.close(fd)
        # After the ledger's line: the history never shows an effect the ledger lacks.
        if phase == "started":
            history.record(
                "effect", tool=tool, arguments=record["arguments"], key=key, effect=effect
            )
        else:
            history.record("effect-done", tool=tool, arguments=record["arguments"])

    def entries(self) -> list[Entry]:
        return read(self.path)

    def has_effect(self, key: str) -> bool:
        """Whether an execution with this idempotency key already had its effect (recorded at start)."""
        return any(e.key == key and e.effect and e.phase == "started" for e in read(self.path))


def read(path: str | os.PathLike[str]) -> list[Entry]:
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return []
    entries: list[Entry] = []
    for line in text.splitlines():
        entry = _parse(line)
        if entry is None:
            # A line torn by a kill mid-write has no newline, so the next writer's record
            # is appended to it: keep that record, drop only the torn fragment.
            start = line.rfind(_RECORD_START, 1)
            entry = _parse(line[start:]) if start > 0 else None
        if entry is not None:
            entries.append(entry)
    return entries


_RECORD_START = '{"scenario": '  # every record begins so (json.dumps keeps key order)


def _parse(line: str) -> Entry | None:
    try:
        return Entry(**json.loads(line))
    except (ValueError, TypeError):
        return None
