"""`[tool.killpoint]` in `pyproject.toml`: a project's defaults for `killpoint matrix`,
found as ruff finds its own table (the nearest `pyproject.toml` from the current folder
upward that has one). The command line wins over it, and it over killpoint's defaults.

Keys are the matrix's options without their dashes (`fail-on`, `work-dir`): every option
killpoint.engine.option_table gives this front, of the TOML type it says; paths are
relative to the file's folder, as pytest reads paths from its ini file. The file is read
within the bounds every input file is (killpoint.values.input_files); an unknown key or a
value of the wrong type is one line naming the key and the file (exit 2), before anything
runs, and a value of the right type is then checked as the same option typed would be.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from killpoint.engine import option_table as table
from killpoint.engine.option_table import (
    BOOL,
    NAMES,
    NUMBER,
    PATH,
    PATH_OR_BUILTIN,
    TEXT,
    WHOLE,
    WORD_OR_WHOLE,
    Option,
)
from killpoint.engine.option_values import BUILTIN
from killpoint.errors import InputError, ProjectConfigError
from killpoint.values.input_files import load_toml

FILE = "pyproject.toml"
TABLE = "[tool.killpoint]"

# key -> the option (its name is the command line's dest): every option the table gives
# this front, with what TOML type it takes.
KEYS: dict[str, Option] = {o.key: o for o in table.on(table.PROJECT)}


@dataclass
class ProjectConfig:
    path: Path | None = None
    values: dict[str, Any] = field(default_factory=dict)  # option name -> value, as text

    def label(self, name: str) -> str:
        """How an error names an option that came from the file."""
        return f"{TABLE} {table.option(name).key} in {self.path}"


def find(start: Path) -> tuple[Path, dict[str, Any]] | None:
    """The nearest pyproject.toml at or above `start` with a [tool.killpoint] table."""
    for folder in (start, *start.parents):
        candidate = folder / FILE
        if not candidate.is_file():
            continue
        try:
            data = load_toml(candidate)
        except InputError as exc:
            raise ProjectConfigError(str(exc)) from None
        table = (
            data.get("tool", {}).get("killpoint") if isinstance(data.get("tool"), dict) else None
        )
        if table is not None:
            if not isinstance(table, dict):
                raise ProjectConfigError(f"killpoint: {candidate}: {TABLE} must be a table")
            return candidate, table
    return None


def _kind(value: Any) -> str:
    return {bool: "a boolean", str: "a string", int: "an integer", float: "a number"}.get(
        type(value), "a " + type(value).__name__
    )


def _text(path: Path, key: str, value: Any, wanted: str) -> str:
    """The value as the command line would have it, or the error naming key and file."""
    wrong = ProjectConfigError(
        f"killpoint: {path}: {TABLE} {key} must be {wanted}"
        + (" (a list of names, or one string of them)" if wanted == NAMES else "")
        + f", not {_kind(value)} ({value!r})"
    )
    if wanted == BOOL:
        if not isinstance(value, bool):
            raise wrong
        return str(value).lower()
    if isinstance(value, bool):
        raise wrong
    if wanted == WORD_OR_WHOLE:
        if not isinstance(value, (str, int)):
            raise wrong
        return str(value)
    if wanted in (TEXT, PATH, PATH_OR_BUILTIN):
        if not isinstance(value, str):
            raise wrong
        if wanted == PATH_OR_BUILTIN and value.strip() == BUILTIN:
            return BUILTIN  # a word, not a file beside pyproject.toml
        if wanted in (PATH, PATH_OR_BUILTIN):
            given = Path(value).expanduser()
            return str(given if given.is_absolute() else path.parent / given)
        return value
    if wanted == WHOLE:
        if not isinstance(value, int):
            raise wrong
        return str(value)
    if wanted == NUMBER:
        if not isinstance(value, (int, float)):
            raise wrong
        return str(value)
    if isinstance(value, str):
        return value
    if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
        return ",".join(value)
    raise wrong


def read(start: Path) -> ProjectConfig:
    """The table's values, checked for keys and types (ProjectConfigError otherwise)."""
    found = find(start)
    if found is None:
        return ProjectConfig()
    path, table = found
    values: dict[str, Any] = {}
    for key, value in table.items():
        if key not in KEYS:
            raise ProjectConfigError(
                f"killpoint: {path}: {TABLE} has no option {key!r}; choose from {', '.join(KEYS)}"
            )
        option = KEYS[key]
        values[option.name] = _text(path, key, value, option.toml)
    return ProjectConfig(path, values)


def merge(given: Mapping[str, Any], project: ProjectConfig) -> dict[str, Any]:
    """Each option as typed, else the file's (None: neither; the option's default)."""
    merged = dict(given)
    for dest, value in project.values.items():
        if merged.get(dest) is None:
            merged[dest] = value
    return merged


__all__ = ["KEYS", "ProjectConfig", "ProjectConfigError", "find", "merge", "read"]
