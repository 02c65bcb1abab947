"""A corpus's manifest (corpus.json) and each state's (state.json): versioned, checked
field by field when read.

A corpus is a plain folder a project may commit. Its manifest says what recorded it (the
killpoint version, the runtime and the versions of its libraries, the store kind, the
corpus schema); each state says where it was taken (scenario, its version, mode, crash
point, the checkpoints held) and what the recording version made of it. A corpus whose
schema this killpoint does not read is refused in one line naming both versions.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from killpoint.corpus import files
from killpoint.errors import CorpusError

SCHEMA = 1  # the corpus format this killpoint writes and reads
MANIFEST = "corpus.json"
STATE = "state.json"
STATES = "states"
BASELINES = "baselines"
MAX_MANIFEST_BYTES = 8 * 1024 * 1024
# A SQLite state is a file (store.db); a PostgreSQL state the data of its schema's tables
# (store.jsonl: killpoint.corpus.pg_form).
STORES = ("sqlite", "postgresql")
# What a state id is made of (SCENARIO/MODE/POINT: scenario references, mode names and
# points use no other character). An id is a pytest node id and a line of output: a
# space, a quote, `#` or `[` in it could shape what a terminal or a CI runner reads.
STATE_ID = re.compile(r"[A-Za-z0-9._@:+=,~/-]{1,300}")


@dataclass(frozen=True)
class Versions:
    """What a side (recording or checking) ran: killpoint, the runtime, its libraries."""

    killpoint: str
    python: str
    runtime: str  # the adapter's spec (`reference`, `agno`, `pkg.mod:factory`)
    libraries: dict[str, str] = field(default_factory=dict)  # distribution -> version


@dataclass(frozen=True)
class Manifest:
    schema: int
    versions: Versions
    store: str  # "sqlite" | "postgresql": which a check must be given
    states: tuple[str, ...]  # state ids, in order
    created: str = ""

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["states"] = list(self.states)
        return data


@dataclass(frozen=True)
class StateInfo:
    """One kept state: where it was taken and what held there."""

    id: str  # scenario/mode/point (stable: a test id)
    scenario: str  # the reference it was recorded with (`research`, `research@tool-added`)
    scenario_name: str
    scenario_version: str
    mode: str
    point: str
    run_index: int  # 0-based: the run in flight at the crash
    run_started_at: int  # checkpoints of the session when that run started
    checkpoints: int  # checkpoints the store held after the kill
    baseline: str  # file under baselines/ of the recording version's baseline
    recorded_verdict: str = ""  # the cell's verdict under the recording version
    recorded_expected: bool = True
    tool_calls: tuple[str, ...] = ()  # durable tool calls at the crash, in order (names)
    bytes: int = 0  # the state's size on disk

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        data["tool_calls"] = list(self.tool_calls)
        return data


def libraries(preload: Iterable[str]) -> dict[str, str]:
    """Installed versions of the distributions that provide the adapter's modules (and
    killpoint's own store libraries)."""
    tops = {m.split(".")[0] for m in preload} | {"sqlalchemy"}
    owners = importlib.metadata.packages_distributions()
    found: dict[str, str] = {}
    for top in sorted(tops):
        for dist in owners.get(top, ()):
            try:
                found[dist] = importlib.metadata.version(dist)
            except importlib.metadata.PackageNotFoundError:
                continue
    # Companion distributions a runtime splits into (langgraph-checkpoint-sqlite, ...).
    # distributions() walks sys.path in order and yields a name once per folder that has
    # it: the first is the one imported (an older release installed in front of a newer).
    for installed in importlib.metadata.distributions():
        name = installed.metadata["Name"] or ""
        if any(name.lower().startswith(f"{t.lower()}-") for t in tops if t != "sqlalchemy"):
            found.setdefault(name, installed.version)
    return dict(sorted(found.items()))


def versions_now(runtime: str, preload: Iterable[str]) -> Versions:
    return Versions(
        killpoint=importlib.metadata.version("killpoint"),
        python=".".join(map(str, sys.version_info[:3])),
        runtime=runtime,
        libraries=libraries(preload),
    )


def write_json(path: Path, data: Mapping[str, Any]) -> None:
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    tmp.replace(path)


def _load(path: Path, what: str) -> Any:
    """A JSON file of the corpus: plain (no link, no device), bounded, parsed."""
    try:
        raw = files.read_bytes(path, MAX_MANIFEST_BYTES)
    except FileNotFoundError:
        raise CorpusError(
            f"killpoint: {str(path)!r} is missing: is this a corpus {what}?"
        ) from None
    try:
        return json.loads(raw)
    except RecursionError:
        raise CorpusError(f"killpoint: {str(path)!r} nests too deep to be a corpus file") from None
    except ValueError as exc:
        raise CorpusError(f"killpoint: {str(path)!r} is not JSON ({exc})") from None


# What each JSON type is called in a refusal (what the field must be).
_MUST = {
    str: "a string",
    int: "a whole number",
    bool: "true or false",
    dict: "an object",
    list: "a list",
}
_VERSION = re.compile(r"[A-Za-z0-9.+!_-]{1,64}")  # a killpoint version, as a refusal quotes it


def _seen(value: Any) -> str:
    """A field's value as a refusal shows it: one line, bounded (a crafted manifest may
    hold a megabyte in a field)."""
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:77]}..."


def _field(
    data: Mapping[str, Any],
    key: str,
    kind: type,
    where: str,
    must: str | None = None,
    default: Any = ...,
) -> Any:
    """`data[key]`, checked to be a `kind` (a bool is no number), else the one-line
    refusal naming the field and what it must be; `default` when absent, if given."""
    must = must or _MUST.get(kind, kind.__name__)
    if key not in data:
        if default is not ...:
            return default
        raise CorpusError(f"killpoint: {where}: field {key!r} is missing; it must be {must}")
    value = data[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
        raise CorpusError(f"killpoint: {where}: field {key!r} is {_seen(value)}; it must be {must}")
    return value


def _strings(data: Mapping[str, Any], key: str, where: str, must: str) -> list[str]:
    """A field that must be a list of strings."""
    value = _field(data, key, list, where, must)
    if not all(isinstance(x, str) for x in value):
        bad = next(x for x in value if not isinstance(x, str))
        raise CorpusError(
            f"killpoint: {where}: field {key!r} holds {_seen(bad)}; it must be {must}"
        )
    return value


def _state_id(value: str, where: str) -> None:
    if not STATE_ID.fullmatch(value):
        raise CorpusError(
            f"killpoint: {where}: {value!r} is not a state id (SCENARIO/MODE/POINT, of letters, "
            "digits and . _ @ : + = , ~ / -)"
        )


def read_manifest(folder: Path) -> Manifest:
    """The corpus's manifest, checked; CorpusError in one line when it cannot be used."""
    if not folder.is_dir():
        raise CorpusError(f"killpoint: corpus {str(folder)!r} is not a folder")
    path = files.inside(folder, MANIFEST)
    data = _load(path, "folder")
    where = str(path)
    if not isinstance(data, dict):
        raise CorpusError(f"killpoint: {where} holds {type(data).__name__}, not an object")
    schema = data.get("schema")
    if type(schema) is not int or schema != SCHEMA:  # true == 1 and 1.0 == 1 in Python
        # Named by the killpoint that made it, if the manifest says so in a shape any
        # schema would have; read before the rest, which an older schema may shape otherwise.
        given = data.get("versions")
        made = given.get("killpoint") if isinstance(given, dict) else None
        by = (
            f"killpoint {made}"
            if isinstance(made, str) and _VERSION.fullmatch(made)
            else "an unknown killpoint"
        )
        raise CorpusError(
            f"killpoint: corpus {str(folder)!r} has schema {_seen(schema)} (made by {by}); "
            f"this killpoint reads schema {SCHEMA}: record it again with "
            "`killpoint corpus record`"
        )
    v = _field(data, "versions", dict, where)
    at = f"{where}: versions"
    libs = _field(v, "libraries", dict, at, "an object of distribution names to versions")
    for name, version in libs.items():
        if not isinstance(version, str):
            raise CorpusError(
                f"killpoint: {at}: library {_seen(name)} has version {_seen(version)}; "
                "it must be a string"
            )
    versions = Versions(
        killpoint=_field(v, "killpoint", str, at),
        python=_field(v, "python", str, at),
        runtime=_field(v, "runtime", str, at),
        libraries=dict(libs),
    )
    store = _field(data, "store", str, where, f"one of {', '.join(map(repr, STORES))}")
    if store not in STORES:
        raise CorpusError(f"killpoint: {where}: store {store!r} is not one this killpoint restores")
    states = _strings(data, "states", where, "a list of state ids")
    created = _field(data, "created", str, where, "a string (UTC time)", default="")
    for n, sid in enumerate(states):
        _state_id(sid, f"{where}: states[{n}]")
    if len(set(states)) != len(states):
        twice = next(s for s in states if states.count(s) > 1)
        raise CorpusError(f"killpoint: {where}: state {twice!r} is listed twice")
    return Manifest(SCHEMA, versions, store, tuple(states), created)


def read_state(folder: Path) -> StateInfo:
    path = files.inside(folder, STATE)
    data = _load(path, "state")
    where = str(path)
    if not isinstance(data, dict):
        raise CorpusError(f"killpoint: {where} holds {type(data).__name__}, not an object")
    strings = ("id", "scenario", "scenario_name", "scenario_version", "mode", "point", "baseline")
    ints = ("run_index", "run_started_at", "checkpoints")
    values: dict[str, Any] = {k: _field(data, k, str, where) for k in strings}
    values.update({k: _field(data, k, int, where) for k in ints})
    _state_id(values["id"], f"{where}: field 'id'")
    calls = (
        _strings(data, "tool_calls", where, "a list of tool names") if "tool_calls" in data else []
    )
    if ".." in Path(values["baseline"]).parts or Path(values["baseline"]).is_absolute():
        raise CorpusError(f"killpoint: {where}: baseline {values['baseline']!r} leaves the corpus")
    return StateInfo(
        **values,
        recorded_verdict=_field(data, "recorded_verdict", str, where, default=""),
        recorded_expected=_field(data, "recorded_expected", bool, where, default=True),
        tool_calls=tuple(calls),
        bytes=_field(data, "bytes", int, where, default=0),
    )


def folder_name(state_id: str) -> str:
    """A state's folder under states/: its id, with what a file name cannot hold replaced."""
    return "".join(c if c.isalnum() or c in "-_.@" else "_" for c in state_id.replace("/", "--"))


# The manifest's JSON schema (draft 2020-12), as docs/reference/corpus.md shows it.
MANIFEST_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "killpoint crash-state corpus manifest (corpus.json)",
    "type": "object",
    "required": ["schema", "versions", "store", "states"],
    "properties": {
        "schema": {"const": SCHEMA},
        "created": {"type": "string", "description": "UTC time of the recording"},
        "store": {"enum": list(STORES)},
        "states": {"type": "array", "items": {"type": "string"}},
        "versions": {
            "type": "object",
            "required": ["killpoint", "python", "runtime", "libraries"],
            "properties": {
                "killpoint": {"type": "string"},
                "python": {"type": "string"},
                "runtime": {"type": "string"},
                "libraries": {"type": "object", "additionalProperties": {"type": "string"}},
            },
        },
    },
}


__all__ = [
    "MANIFEST",
    "MANIFEST_SCHEMA",
    "SCHEMA",
    "CorpusError",
    "Manifest",
    "StateInfo",
    "Versions",
    "folder_name",
    "read_manifest",
    "read_state",
    "versions_now",
    "write_json",
]
