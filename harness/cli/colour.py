"""Whether the `killpoint` command colours what it prints: `--color auto|always|never`,
then the conventions CI systems and users set (no-color.org's NO_COLOR, FORCE_COLOR),
then whether the stream is a terminal.

The choice is made once per command, here, and every console the command makes reads it;
rich would read the same variables itself, but only per console and without `--color`.
"""

from __future__ import annotations

from collections.abc import Mapping

CHOICES = ("auto", "always", "never")

_chosen = "auto"


def choose(flag: str | None) -> None:
    """The command's `--color` (None: not given, auto)."""
    global _chosen
    _chosen = flag or "auto"


def coloured(terminal: bool, environ: Mapping[str, str], flag: str | None = None) -> bool:
    """Whether to colour a stream: `--color` wins; then NO_COLOR (any non-empty value) turns
    colour off and FORCE_COLOR (any non-empty value) on; else only a terminal gets it."""
    flag = flag or _chosen
    if flag != "auto":
        return flag == "always"
    if environ.get("NO_COLOR", ""):
        return False
    if environ.get("FORCE_COLOR", ""):
        return True
    return terminal


__all__ = ["CHOICES", "choose", "coloured"]
