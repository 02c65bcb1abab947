"""A cell's timeline: what happened when, to which process, as data.

Each event carries its kind and its lane, so the report draws it without reading the
text (the text is for people). In the JSON an event is `[t, text, kind, lane]`.
"""

from __future__ import annotations

from typing import NamedTuple

# start/end/kill: a process's life; pause/wake: SIGSTOP and SIGCONT; fault: what went
# wrong or was done to the run; tool/store: a gate or a confirmation; other: a note.
KINDS = ("start", "end", "kill", "pause", "wake", "fault", "tool", "store", "other")


class Event(NamedTuple):
    t: float  # seconds since the cell began
    text: str
    kind: str = "other"
    lane: str = "harness"


def gate_event(t: float, gate: str) -> Event:
    """A gate announced by a worker: a tool's, or one of the store's."""
    if gate.startswith("tool:"):
        return Event(t, f"gate {gate}", "tool", "tools")
    return Event(t, f"gate {gate}", "store", "store")


def event_from_json(entry: list[object] | tuple[object, ...]) -> Event:
    """An event from the JSON; entries written before kinds existed read as notes."""
    t, text, kind, lane = [*entry, "other", "harness"][:4] if len(entry) == 2 else entry[:4]
    return Event(float(t), str(text), str(kind), str(lane))  # type: ignore[arg-type]
