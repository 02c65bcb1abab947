"""Run content made safe to show: visible (no control characters, separators, bidi
overrides or lone surrogates: killpoint.values.shown), clipped to a size, or cut to one
line. Shared by the HTML report, the terminal and the pytest plugin's summary."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from killpoint.values.findings import SEVERITIES
from killpoint.values.sentences import count
from killpoint.values.shown import visible

TEXT = 240  # characters of a one-line sentence before it is cut, with an ellipsis
TAIL_MIN = 40  # characters of a log excerpt's end worth showing after its sentence
# Characters of any one text in the JSON and the HTML: an 8 MiB stderr line keeps its end,
# and the report keeps to its size limit.
FIELD_LIMIT = 32 * 1024
# The line that opens a worker log's excerpt appended to a sentence ("--- baseline stderr
# ---", killpoint.engine.cell_run.log_tail): what follows it is a log's end, a traceback.
_EXCERPT = re.compile(r"\n--- ([^\n]{1,80}) ---\n")
# A line of Python 3.11's position markers under a frame's source (`^^^^`, `~~~^^^`): in
# one line they are noise that takes the place of a frame.
_MARKERS = re.compile(r"[\^~]+")
# A frame's file as its last folder and name: the whole path would fill the line.
_FRAME_FILE = re.compile(r'File "(?:[^"\n]*/)?([^"/\n]+/[^"/\n]+)"')


def number(value: Any) -> int | float | str | None:
    """A figure as it is; anything else in its place, as visible text."""
    if value is None or (isinstance(value, int | float) and not isinstance(value, bool)):
        return value
    return visible(value)


def as_float(value: Any) -> float:
    try:
        return float(value or 0)
    except (TypeError, ValueError):
        return 0.0


def clip_tail(text: str, limit: int) -> tuple[str, int]:
    """The last `limit` characters (from a line start when one is near); and the full length."""
    if len(text) <= limit:
        return text, 0
    tail = text[-limit:]
    cut = tail.find("\n")
    if 0 <= cut < 200:
        tail = tail[cut + 1 :]
    return tail, len(text)


def clip_head(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit] + f"… ({len(text)} chars)"


def split_excerpt(text: str) -> tuple[str, str, str]:
    """A sentence and the log excerpt appended to it (killpoint.engine.cell_run.log_tail):
    (the sentence, the excerpt's name such as "baseline stderr", the excerpt's lines);
    (text, "", "") when it has none."""
    found = _EXCERPT.search(text)
    if found is None:
        return text, "", ""
    return text[: found.start()], found.group(1), text[found.end() :]


def cut(text: str, limit: int = TEXT) -> str:
    """One line of at most `limit` characters; a cut one ends with an ellipsis. A sentence
    with a log excerpt appended (a traceback) keeps the excerpt's end, not its head, in
    the room the sentence leaves: the exception and the frames that raised it (the
    runtime's own, innermost) are last, and the head is the worker's and asyncio's frames
    that every such traceback shares."""
    line = " ".join(text.split())
    if len(line) <= limit:
        return line
    head, name, excerpt = split_excerpt(text)
    said = [
        _FRAME_FILE.sub(r'File "…/\1"', part)
        for part in excerpt.splitlines()
        if part.strip() and not _MARKERS.fullmatch(part.strip())
    ]
    sentence = " ".join(head.split())
    label = f" --- {name}, its end: …"
    room = limit - len(sentence) - len(label)
    if not said or room < TAIL_MIN:
        # The sentence first, whole where it can be: it already names the exception and
        # the line that raised it; the excerpt's end only fills the room it leaves.
        return line[: limit - 1].rstrip() + "…"
    end = " ".join(" ".join(said).split())
    if len(end) > room:
        start = len(end) - room
        if end[start - 1] != " ":  # cut inside a word: from the next word's start, if near
            space = end.find(" ", start, start + 40)
            start = space + 1 if space >= 0 else start
        end = end[start:]
    return f"{sentence}{label}{end}"


def failing_causes(causes: Sequence[Mapping[str, Any]]) -> int:
    """How many of a report's causes fail the campaign (cells failing, not accepted)."""
    return sum(1 for c in causes if c.get("failing_cells") and not c.get("accepted"))


def causes_heading(causes: Sequence[Mapping[str, Any]]) -> str:
    """ "5 causes", and how many of them fail the campaign when not all do: the figures line
    counts only those ("23 unexpected from 4 causes"), and the two must not read as a
    contradiction."""
    failing = failing_causes(causes)
    heading = count(len(causes), "cause")
    return heading if failing == len(causes) else f"{heading} ({failing} failing the campaign)"


def cell_verdicts(verdicts: Any, fallback: Any) -> dict[str, int | None]:
    """The verdicts a group's or a cause's cells have, most cells first: its badge is the
    first (killpoint.judge.groups.Group.badge), never only the one its kind names (an
    `effect-lost` group of `corrupt` cells says `corrupt`). The kind's own verdict,
    uncounted, where the document does not say (a row-level group, an old report). Every
    face reads a badge here: the terminal, the HTML page, the Markdown summary."""
    if isinstance(verdicts, Mapping) and verdicts:
        return {str(v): n for v, n in verdicts.items()}
    return {str(fallback): None}


def verdicts_said(verdicts: Any, fallback: Any = None) -> str:
    """`cell_verdicts` as words: "42 corrupt, 8 diverged"; "diverged" when uncounted; ""
    when there is nothing to say."""
    if fallback is None and not (isinstance(verdicts, Mapping) and verdicts):
        return ""
    return ", ".join(
        str(v) if n is None else f"{n} {v}" for v, n in cell_verdicts(verdicts, fallback).items()
    )


def heading(group: Mapping[str, Any]) -> str:
    """What tells a group from every other: kind, tool and path (Group.heading)."""
    tool = f" (tool {group['tool']})" if group.get("tool") else ""
    path = group.get("path")
    where = f" at {path}" if path and path != "-" else ""
    return f"{group.get('kind', '?')}{tool}{where}"


def failing(document: Mapping[str, Any], threshold: str | None = None) -> list[dict[str, Any]]:
    """The groups (cells' and rows') that fail the campaign: by `--fail-on` when given (any
    group of that severity or above, not accepted), else those that fail by their verdict
    and severity."""
    found = []
    for key in ("groups", "without_crash"):
        for g in document.get(key) or []:
            if not isinstance(g, Mapping) or g.get("accepted"):
                continue
            severity = str(g.get("severity", "high"))
            rank = SEVERITIES.index(severity) if severity in SEVERITIES else 0
            if threshold is not None:
                keep = rank <= SEVERITIES.index(threshold)
            elif "failing" in g:
                keep = bool(g["failing"])
            else:  # a report written before severities decided: its verdict
                keep = g.get("verdict") != "ok"
            if keep:
                found.append({**g, "without_crash": key == "without_crash"})
    return found
