"""The accepted finding groups a campaign is held to, from the `accept` option as any front
gives it (killpoint.engine.option_table): a TOML file of the user's, or `builtin`, the file
a built-in runtime ships for what its documentation calls by design."""

from __future__ import annotations

from pathlib import Path

from killpoint.adapters.registry import accepted_file
from killpoint.engine.option_values import BUILTIN
from killpoint.judge.groups import Accepted, read_accepted


def accepted_groups(accept: Path | str | None, runtime: str) -> dict[str, Accepted]:
    """{group key: entry}; AcceptError naming the file when one cannot be read. `builtin`
    is empty for a runtime that ships no file (the reference runtime has no by-design
    findings; a user's adapter ships none)."""
    if accept is None:
        return {}
    if accept == BUILTIN:
        found = accepted_file(runtime)
        return read_accepted(found) if found is not None else {}
    return read_accepted(Path(accept))


__all__ = ["BUILTIN", "accepted_groups"]
