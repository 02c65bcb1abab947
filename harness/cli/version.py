"""`killpoint --version`: killpoint's version, the Python running it, and the versions of
the libraries a campaign's results depend on (read from the installed distributions'
metadata: nothing is imported, so the line costs milliseconds)."""

from __future__ import annotations

import platform
from importlib import metadata

# The engine's own dependencies, then the built-in runtimes' (when installed).
LIBRARIES = ("SQLAlchemy", "openai", "httpx", "psycopg", "rich", "pytest", "hypothesis")


def version_line() -> str:
    from killpoint.adapters.registry import BUILTINS

    runtimes = [d for b in BUILTINS.values() for d in b.distributions]
    found = []
    for name in dict.fromkeys((*LIBRARIES, *runtimes)):
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return (
        f"killpoint {_own()} (Python {platform.python_version()}"
        + (f"; {', '.join(found)}" if found else "")
        + ")"
    )


def _own() -> str:
    try:
        return metadata.version("killpoint")
    except metadata.PackageNotFoundError:  # run from a checkout that was never installed
        return "unknown (not installed)"


__all__ = ["version_line"]
