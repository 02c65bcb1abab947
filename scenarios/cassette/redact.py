"""What a cassette never holds: credentials in headers, and the fields a user names.

Headers are written without every header that carries a credential or an account (the
list below, and any name the user adds), whatever its value. Fields are named by a small
JSON path: `$.user`, `$.metadata.customer_id`, `$.input[*].content`, `$.output[0].id`,
`$.*.secret` (`[N]` one element, `[*]` every element, `*` every key). A path is applied to
a request's body before its history is read (so what a history shows and what it is keyed
by are the redacted text, at recording and at replay alike) and to each reply's body, or
each event of a streamed reply, before it is written. A redacted value becomes REDACTED.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

REDACTED = "[redacted]"

# Headers never written, in any case: credentials, accounts, cookies, and framing that a
# replay sends afresh.
SECRET_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "x-api-key",
        "api-key",
        "cookie",
        "set-cookie",
        "openai-organization",
        "openai-project",
        "x-goog-api-key",
        "anthropic-organization-id",
    }
)
FRAMING_HEADERS = frozenset(
    {"content-length", "transfer-encoding", "connection", "content-encoding", "keep-alive", "host"}
)

_STEP = re.compile(
    r"\.(?P<key>[A-Za-z_][\w-]*|\*)|\[(?P<index>\d+|\*)\]|\[(?P<quoted>'[^']*'|\"[^\"]*\")\]"
)


class PathError(ValueError):
    """A JSON path that is not of the form this module reads."""


def parse_path(path: str) -> tuple[str | int, ...]:
    """`$.a.b[0][*].*` as steps: a key, an index, or `*` (every key or element)."""
    text = path.strip()
    if not text.startswith("$"):
        raise PathError(
            f"cassette: redaction path {path!r} should begin with '$', e.g. '$.metadata.user_id'"
        )
    steps: list[str | int] = []
    at = 1
    while at < len(text):
        m = _STEP.match(text, at)
        if m is None:
            raise PathError(
                f"cassette: redaction path {path!r} cannot be read at {text[at:]!r}; use "
                "'.key', '[N]', '[*]' or '.*' steps, e.g. '$.input[*].content'"
            )
        if m["key"] is not None:
            steps.append(m["key"])
        elif m["index"] is not None:
            steps.append("*" if m["index"] == "*" else int(m["index"]))
        else:
            steps.append(m["quoted"][1:-1])
        at = m.end()
    if not steps:
        raise PathError(f"cassette: redaction path {path!r} names no field; '$' is the whole body")
    return tuple(steps)


def _redact(value: Any, steps: Sequence[str | int]) -> tuple[Any, bool]:
    if not steps:
        return REDACTED, True
    step, rest = steps[0], steps[1:]
    changed = False
    if isinstance(value, dict):
        keys = list(value) if step == "*" else [step] if step in value else []
        for key in keys:
            value[key], hit = _redact(value[key], rest)
            changed |= hit
    elif isinstance(value, list):
        if step == "*":
            indexes: Iterable[int] = range(len(value))
        elif isinstance(step, int) and step < len(value):
            indexes = [step]
        else:
            indexes = []
        for n in indexes:
            value[n], hit = _redact(value[n], rest)
            changed |= hit
    return value, changed


@dataclass(frozen=True)
class Redactions:
    """The user's choices: header names and JSON paths (checked when made)."""

    headers: tuple[str, ...] = ()
    paths: tuple[str, ...] = ()
    _steps: tuple[tuple[str | int, ...], ...] = field(default=(), compare=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "headers", tuple(h.strip().lower() for h in self.headers))
        object.__setattr__(self, "_steps", tuple(parse_path(p) for p in self.paths))

    def to_json(self) -> dict[str, Any]:
        return {"headers": list(self.headers), "paths": list(self.paths)}

    @classmethod
    def from_json(cls, data: Any) -> Redactions:
        if data is None:
            return cls()
        if not isinstance(data, Mapping):
            raise PathError("cassette: redactions must be an object with headers and paths")
        headers, paths = data.get("headers") or [], data.get("paths") or []
        if not all(isinstance(h, str) for h in headers) or not all(
            isinstance(p, str) for p in paths
        ):
            raise PathError("cassette: redactions.headers and .paths must be lists of strings")
        return cls(tuple(headers), tuple(paths))

    def kept_headers(self, headers: Iterable[tuple[str, str]]) -> dict[str, str]:
        """The headers a cassette may hold: none that carries a credential, none that a
        replay frames afresh, none the user named."""
        dropped = SECRET_HEADERS | FRAMING_HEADERS | set(self.headers)
        return {k.lower(): v for k, v in headers if k.lower() not in dropped}

    def body(self, value: Any) -> tuple[Any, bool]:
        """A JSON value with every path redacted (a copy when one matched), and whether one
        did."""
        if not self._steps or not isinstance(value, (dict, list)):
            return value, False
        value = copy.deepcopy(value)
        changed = False
        for steps in self._steps:
            value, hit = _redact(value, steps)
            changed |= hit
        return value, changed


__all__ = ["FRAMING_HEADERS", "REDACTED", "SECRET_HEADERS", "PathError", "Redactions", "parse_path"]
