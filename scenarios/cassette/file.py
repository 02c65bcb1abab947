"""The cassette file: one JSON document, written once by `killpoint record`, read by every
worker that replays it.

    {
      "killpoint_cassette": 1,
      "name": "research-agno",
      "scenario": "research",          # whose tools and inputs were recorded; null: the agent's own
      "inputs": ["..."],
      "outcomes": [{"status": "COMPLETED", "content": "...", "calls": ["search", ...]}],
      "redactions": {"headers": [...], "paths": [...]},
      "recorded": {"runtime": "agno", "mode": "tool-batch", "provider": "...", ...},
      "interactions": [
        {"turn": 1,
         "request": {"method": "POST", "path": "/v1/responses", "format": "responses",
                     "stream": false, "model": "...", "headers": {...},
                     "history": {"system": "...", "tools": [...], "items": [[...], ...]}},
         "response": {"status": 200, "headers": {...}, "body": "<the bytes sent, as text>"}
                     # or "events": ["event: ...\\ndata: {...}\\n\\n", ...] for a stream
         "reply": {"text": ..., "calls": [...], "usage": {...}}}   # a summary for people
      ]
    }

`outcomes` is how each run of the recording ended (its status, its final answer, the tool
calls it made, as the runtime stored them): the scenario's expected end. `reply` is read
from `response` and written for people; replay serves `response`.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..wire import CHAT, MESSAGES, RESPONSES
from .history import History
from .redact import PathError, Redactions
from .replies import ReplyError, Said, read

VERSION = 1
FORMATS = (RESPONSES, CHAT, MESSAGES)


class CassetteError(ValueError):
    """A cassette that cannot be read (missing, not JSON, not this format, a bad field)."""


@dataclass(frozen=True)
class Response:
    status: int
    headers: dict[str, str]
    body: str | None = None  # a whole reply's text
    events: tuple[str, ...] | None = None  # a streamed reply's server-sent events

    @property
    def ok(self) -> bool:
        return 200 <= self.status < 300

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"status": self.status, "headers": self.headers}
        if self.events is not None:
            data["events"] = list(self.events)
        else:
            data["body"] = self.body
        return data


@dataclass(frozen=True)
class Interaction:
    """One request of the recorded run and the provider's response to it."""

    turn: int
    format: str
    method: str
    path: str
    stream: bool
    model: str
    headers: dict[str, str]
    history: History
    response: Response
    said: Said | None = None  # what the model said (None: an error response)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "turn": self.turn,
            "request": {
                "method": self.method,
                "path": self.path,
                "format": self.format,
                "stream": self.stream,
                "model": self.model,
                "headers": self.headers,
                "history": self.history.to_json(),
            },
            "response": self.response.to_json(),
        }
        if self.said is not None:
            data["reply"] = self.said.summary()
        return data


@dataclass(frozen=True)
class Outcome:
    """How one run of the recording ended."""

    status: str
    content: str | None
    calls: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "content": self.content, "calls": list(self.calls)}


@dataclass(frozen=True)
class Cassette:
    name: str
    inputs: tuple[str, ...]
    outcomes: tuple[Outcome, ...]
    interactions: tuple[Interaction, ...]
    scenario: str | None = None
    redactions: Redactions = field(default_factory=Redactions)
    recorded: dict[str, Any] = field(default_factory=dict)

    def replies(self) -> dict[str, list[Interaction]]:
        """The replies a replay serves, by the key of the history they answer, in the order
        they were recorded (an error response is not one: a replay's faults are its own)."""
        found: dict[str, list[Interaction]] = {}
        for i in self.interactions:
            if i.said is not None:
                found.setdefault(i.history.key(), []).append(i)
        return found

    def first(self) -> Interaction | None:
        return self.interactions[0] if self.interactions else None

    def to_json(self) -> dict[str, Any]:
        return {
            "killpoint_cassette": VERSION,
            "name": self.name,
            "scenario": self.scenario,
            "inputs": list(self.inputs),
            "outcomes": [o.to_json() for o in self.outcomes],
            "redactions": self.redactions.to_json(),
            "recorded": self.recorded,
            "interactions": [i.to_json() for i in self.interactions],
        }


# -- reading --------------------------------------------------------------------------------


def _need(data: Mapping[str, Any], key: str, kind: type | tuple[type, ...], where: str) -> Any:
    value = data.get(key)
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is int):
        names = " or ".join(k.__name__ for k in (kind if isinstance(kind, tuple) else (kind,)))
        raise CassetteError(f"{where}.{key} should be {names}, not {value!r}"[:300])
    return value


def _headers(value: Any, where: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise CassetteError(f"{where}.headers should map names to strings")
    return dict(value)


def _response(data: Any, where: str) -> Response:
    if not isinstance(data, dict):
        raise CassetteError(f"{where} should be an object")
    status = _need(data, "status", int, where)
    events = data.get("events")
    if events is not None:
        if not isinstance(events, list) or not all(isinstance(e, str) for e in events):
            raise CassetteError(f"{where}.events should be a list of server-sent events (text)")
        return Response(status, _headers(data.get("headers"), where), None, tuple(events))
    body = data.get("body")
    if not isinstance(body, str):
        raise CassetteError(f"{where} needs a body (text) or events")
    return Response(status, _headers(data.get("headers"), where), body)


def _interaction(data: Any, n: int) -> Interaction:
    where = f"interactions[{n}]"
    if not isinstance(data, dict):
        raise CassetteError(f"{where} should be an object")
    request = _need(data, "request", dict, where)
    wire = _need(request, "format", str, f"{where}.request")
    if wire not in FORMATS:
        raise CassetteError(f"{where}.request.format {wire!r} is none of {', '.join(FORMATS)}")
    try:
        history = History.from_json(_need(request, "history", dict, f"{where}.request"))
    except ValueError as exc:
        raise CassetteError(f"{where}.request.{exc}") from None
    response = _response(data.get("response"), f"{where}.response")
    stream = bool(request.get("stream"))
    said = None
    if response.ok:
        try:
            said = read(wire, response.body, response.events)
        except ReplyError as exc:
            raise CassetteError(f"{where}.response: {exc}") from None
    return Interaction(
        turn=_need(data, "turn", int, where),
        format=wire,
        method=str(request.get("method") or "POST"),
        path=str(request.get("path") or ""),
        stream=stream,
        model=str(request.get("model") or ""),
        headers=_headers(request.get("headers"), f"{where}.request"),
        history=history,
        response=response,
        said=said,
    )


def from_json(data: Any) -> Cassette:
    if not isinstance(data, dict) or "killpoint_cassette" not in data:
        raise CassetteError("not a killpoint cassette (no 'killpoint_cassette' field)")
    if data["killpoint_cassette"] != VERSION:
        raise CassetteError(
            f"cassette format {data['killpoint_cassette']!r}; this killpoint reads format "
            f"{VERSION}: record it again with `killpoint record`"
        )
    inputs = _need(data, "inputs", list, "cassette")
    if not inputs or not all(isinstance(i, str) for i in inputs):
        raise CassetteError("cassette.inputs should be a list of one or more texts")
    outcomes = []
    for n, o in enumerate(_need(data, "outcomes", list, "cassette")):
        if not isinstance(o, dict):
            raise CassetteError(f"outcomes[{n}] should be an object")
        calls = o.get("calls") or []
        if not all(isinstance(c, str) for c in calls):
            raise CassetteError(f"outcomes[{n}].calls should be a list of tool names")
        content = o.get("content")
        outcomes.append(
            Outcome(
                _need(o, "status", str, f"outcomes[{n}]"),
                content if isinstance(content, str) else None,
                tuple(calls),
            )
        )
    if len(outcomes) != len(inputs):
        raise CassetteError(
            f"cassette has {len(inputs)} inputs but {len(outcomes)} outcomes: one run of the "
            "recording ended early; record it again"
        )
    interactions = tuple(
        _interaction(i, n) for n, i in enumerate(_need(data, "interactions", list, "cassette"))
    )
    scenario = data.get("scenario")
    try:
        redactions = Redactions.from_json(data.get("redactions"))
    except PathError as exc:
        raise CassetteError(str(exc)) from None
    recorded = data.get("recorded")
    return Cassette(
        name=str(data.get("name") or "cassette"),
        inputs=tuple(inputs),
        outcomes=tuple(outcomes),
        interactions=interactions,
        scenario=scenario if isinstance(scenario, str) and scenario else None,
        redactions=redactions,
        recorded=dict(recorded) if isinstance(recorded, dict) else {},
    )


_cache: dict[tuple[str, int, int], Cassette] = {}

MIB = 1024 * 1024
# A recorded cassette is kilobytes to a few MiB; the bound is the one a corpus file has,
# as a corpus state names its cassette and is read as data like every other file in it.
CASSETTE_BYTES = 64 * MIB
_RECORD = "record one with `killpoint record --out PATH`"
_GIVE = "give the JSON file `killpoint record --out PATH` wrote"


def _shown(where: Path) -> str:
    return repr(str(where))


def _open(where: Path) -> int:
    """A descriptor for `where`. O_NONBLOCK: opening a FIFO with no writer would wait
    forever, and the descriptor is checked to be a regular file before a byte is read."""
    try:
        return os.open(where, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as exc:
        raise CassetteError(
            f"cassette {_shown(where)} cannot be read ({exc.strerror or exc}); {_RECORD}"
        ) from None


def _checked(where: Path, fd: int) -> os.stat_result:
    """The descriptor's stat, once it is known to be a regular file within CASSETTE_BYTES:
    a device (/dev/zero), a pipe or a folder never ends, never starts or is no file."""
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        raise CassetteError(
            f"cassette {_shown(where)} is not a regular file (a folder, a device, a pipe or "
            f"a socket); {_GIVE}"
        )
    if st.st_size > CASSETTE_BYTES:
        raise _too_big(where)
    return st


def _too_big(where: Path) -> CassetteError:
    return CassetteError(
        f"cassette {_shown(where)} is larger than {CASSETTE_BYTES // MIB} MiB, the most a "
        f"cassette may hold; {_GIVE}"
    )


def _read(where: Path, fd: int) -> bytes:
    """At most CASSETTE_BYTES of the file: one that grew past them since fstat is refused."""
    try:
        with os.fdopen(fd, "rb", closefd=False) as f:
            data = f.read(CASSETTE_BYTES + 1)
    except OSError as exc:
        raise CassetteError(
            f"cassette {_shown(where)} cannot be read ({exc.strerror or exc}); {_RECORD}"
        ) from None
    if len(data) > CASSETTE_BYTES:
        raise _too_big(where)
    return data


def _parsed(where: Path, data: bytes) -> Any:
    """The JSON in `data`; the errors name a position, never the text found there."""
    try:
        return json.loads(data.decode("utf-8"))
    except UnicodeDecodeError as exc:
        problem = f"not UTF-8 text ({exc.reason} at byte {exc.start})"
    except ValueError as exc:
        problem = f"not JSON: {exc}"
    except RecursionError:
        # The parser nests a frame per level; 100,000 levels run out of stack, and no
        # cassette `killpoint record` writes nests more than a few.
        problem = "JSON nested too deep to read"
    raise CassetteError(f"cassette {_shown(where)} is {problem}; {_GIVE}")


def load(path: str | os.PathLike[str]) -> Cassette:
    """The cassette at `path` (cached while the file is unchanged); CassetteError says
    what is wrong with it and how to fix it. The file is read as bounded data: a regular
    file of at most CASSETTE_BYTES, whoever named it (a corpus state, `--scenarios`)."""
    where = Path(path)
    fd = _open(where)
    try:
        st = _checked(where, fd)
        key = (str(where.resolve()), st.st_mtime_ns, st.st_size)
        if key in _cache:
            return _cache[key]
        data = _parsed(where, _read(where, fd))
    finally:
        os.close(fd)
    try:
        cassette = from_json(data)
    except CassetteError as exc:
        raise CassetteError(f"cassette {_shown(where)}: {exc}") from None
    if len(_cache) >= 16:
        _cache.clear()
    _cache[key] = cassette
    return cassette


def dump(cassette: Cassette | Mapping[str, Any], path: str | os.PathLike[str]) -> None:
    """Write a cassette (or its JSON, already masked) to `path` atomically: a reader sees
    the old file or the new one, never part of one."""
    data = cassette.to_json() if isinstance(cassette, Cassette) else cassette
    where = Path(path)
    where.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=where.parent, prefix=f".{where.name}.", suffix=".tmp")
    try:
        umask = os.umask(0)
        os.umask(umask)
        os.fchmod(fd, 0o666 & ~umask)  # as open() would make it: a file to commit
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2, ensure_ascii=False)
            f.write("\n")
        os.replace(tmp, where)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def histories(interactions: Sequence[Interaction]) -> list[History]:
    return [i.history for i in interactions]


__all__ = [
    "VERSION",
    "Cassette",
    "CassetteError",
    "Interaction",
    "Outcome",
    "Response",
    "dump",
    "from_json",
    "histories",
    "load",
]
