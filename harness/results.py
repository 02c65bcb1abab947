"""The campaign's JSON: one document, written atomically (never half a file)."""

from __future__ import annotations

import json
import os
import platform
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any

from .campaign import CampaignResult

SCHEMA = "killpoint.matrix/1"


def versions(extra: tuple[str, ...] = ()) -> dict[str, str]:
    found = {"python": platform.python_version()}
    for dist in ("killpoint", "openai", "SQLAlchemy", "psycopg", "respx", "agno", *extra):
        try:
            found[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    return found


def _adapter(runtime: str) -> object:
    from .adapter import AdapterError, load_adapter

    try:
        return load_adapter(runtime)
    except AdapterError:
        return object()


def to_document(result: CampaignResult, command: list[str] | None = None) -> dict[str, Any]:
    config = result.config
    return {
        "schema": SCHEMA,
        "command": " ".join(command if command is not None else sys.argv),
        "seed": result.seed,
        "runtime": config.runtime,
        "store": config.store if config.store == "sqlite" else "postgresql",
        "modes": list(config.mode_names()),
        "points": config.points,
        "depth": config.depth,
        "versions": versions(),
        "interrupted": result.interrupted,
        "summary": result.summary(),
        "excluded_from_comparison": list(getattr(_adapter(config.runtime), "excluded", ())),
        "skipped": [
            {**vars(s), "store": config.store if config.store == "sqlite" else "postgresql"}
            for s in result.skipped
        ],
        "baselines": [
            {
                "runtime": b.runtime,
                "scenario": b.scenario,
                "mode": b.mode,
                "store": b.store,
                "checkpoints": b.checkpoints,
                "seconds": round(b.seconds, 3),
                "problem": b.problem,
                "nondeterministic": b.nondeterministic,
            }
            for b in result.baselines
        ],
        "cells": [c.to_json() for c in result.cells],
    }


def check_writable(path: Path) -> None:
    """Raise OSError naming the path if a report cannot be written there (before any work)."""
    folder = path.parent if str(path.parent) else Path(".")
    folder.mkdir(parents=True, exist_ok=True)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory")
    if not os.access(folder, os.W_OK):
        raise PermissionError(f"{folder} is not writable")


def write_atomically(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        # mkstemp makes the file private (0600); a report is meant to be shared.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(document: dict[str, Any], path: Path) -> None:
    write_atomically(path, json.dumps(document, indent=1, ensure_ascii=True) + "\n")


def read_json(path: Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as f:
        return json.load(f)
