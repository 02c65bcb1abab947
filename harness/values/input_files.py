"""Files killpoint reads that anyone could have written (a report for `killpoint report`,
`--rerun-failed` or `replay --json`, an accept file): read within a size, nested within a
depth, or refused with one line before a parser can run out of memory or of stack.

`/dev/zero` is read up to the limit and refused; a 100,000-deep JSON or TOML stops the
parser at the interpreter's depth (a RecursionError, caught), and what parses is walked
without recursion and refused past DEPTH, before anything recursive (redaction, the
renderer) sees it.
"""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from killpoint.errors import InputError

MIB = 1024 * 1024
REPORT_BYTES = 32 * MIB  # six times the size a report is held to
# What `merge` reads in all, by default: two report files at their limit, a dozen at the
# size a report is held to. A shard's JSON holds its own cells and every row's
# baselines, so the shards of one campaign add up to little more than its unsharded
# report; parsed, JSON takes about seven times its size in memory.
MERGE_BYTES = 2 * REPORT_BYTES
ACCEPT_BYTES = 1024 * 1024
DEPTH = 64  # a report nests 8 deep at most; an accept file 3


def read_bounded(path: Path, limit: int) -> str:
    """The file's text, at most `limit` bytes of it; InputError past that, or when it
    cannot be read or is not UTF-8."""
    name = repr(str(path))
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except OSError as exc:
        raise InputError(f"killpoint: cannot read {name}: {exc.strerror or exc}") from None
    if len(data) > limit:
        raise InputError(
            f"killpoint: {name} is larger than {limit // (1024 * 1024)} MiB; give the file "
            "killpoint wrote"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(
            f"killpoint: {name} is not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None


def read_int(value: Any) -> int | None:
    """An integer a document read back holds; None for anything else, a bool among them
    (JSON's `true` parses as a Python int)."""
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def nesting(value: Any) -> int:
    """How deep a parsed value nests (lists and objects), walked without recursion;
    counting stops past DEPTH."""
    deepest = 0
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        deepest = max(deepest, depth)
        if deepest > DEPTH:
            break
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return deepest


def _shallow(value: Any, path: Path) -> Any:
    if nesting(value) > DEPTH:
        raise _too_deep(path)
    return value


def _too_deep(path: Path) -> InputError:
    return InputError(
        f"killpoint: {str(path)!r} nests deeper than {DEPTH} levels; give the file killpoint wrote"
    )


def load_json(path: Path, limit: int = REPORT_BYTES) -> Any:
    text = read_bounded(path, limit)
    try:
        value = json.loads(text)
    except RecursionError:  # the parsers stop at the interpreter's depth, with this
        raise _too_deep(path) from None
    except ValueError as exc:
        raise InputError(f"killpoint: {str(path)!r} is not JSON ({exc})") from None
    return _shallow(value, path)


def load_toml(path: Path, limit: int = ACCEPT_BYTES) -> dict[str, Any]:
    text = read_bounded(path, limit)
    try:
        value = tomllib.loads(text)
    except RecursionError:
        raise _too_deep(path) from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"killpoint: {str(path)!r} is not TOML: {exc}") from None
    return _shallow(value, path)


__all__ = [
    "ACCEPT_BYTES",
    "DEPTH",
    "MERGE_BYTES",
    "MIB",
    "REPORT_BYTES",
    "InputError",
    "load_json",
    "load_toml",
    "nesting",
    "read_bounded",
]
