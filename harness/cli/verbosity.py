"""How much the `killpoint` command says: `--quiet` (-1), the default (0), `--verbose` (1).

Quiet keeps what a CI log needs to act on: errors, the problems found (groups, failed
checks), the one-line summary and the `written:` line; it drops the header, progress, the
table and step-by-step detail. Verbose adds one line per finished cell to the progress.
"""

from __future__ import annotations

QUIET, NORMAL, VERBOSE = -1, 0, 1

_level = NORMAL


def choose(*, quiet: bool = False, verbose: int = 0) -> None:
    global _level
    _level = QUIET if quiet else (VERBOSE if verbose else NORMAL)


def level() -> int:
    return _level


def quiet() -> bool:
    return _level <= QUIET


def verbose() -> bool:
    return _level >= VERBOSE


__all__ = ["NORMAL", "QUIET", "VERBOSE", "choose", "level", "quiet", "verbose"]
