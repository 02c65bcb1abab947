"""The name a typo most likely meant: `reseach` -> `research`, `side_effects` ->
`side-effects`, `--timout` -> `--timeout`.

One helper for every message that lists the choices of a name (a scenario, a point kind or
group, a mode, a runtime, an option, a module's attribute): a list of twenty names reads
slower than the one that was meant. In killpoint.values, the lowest layer, so that the
command line, the plugin, the engine's option readers and the adapters' registry all ask
the same question the same way.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable


def _folded(name: str) -> str:
    """A name as a typo's comparison sees it: case and `_`/`-` do not count (a Python
    identifier's `side_effects` means the option's `side-effects`)."""
    return name.casefold().replace("_", "-")


def nearest(given: str, known: Iterable[str]) -> str | None:
    """The one of `known` that `given` most likely meant, or None when none is close
    (difflib's ratio of at least 0.6: a name, not a guess). `given` itself is never
    suggested: it is what was refused."""
    names = [k for k in dict.fromkeys(known) if k != given]
    by_fold = {_folded(k): k for k in names}
    same = by_fold.get(_folded(given))
    if same is not None:
        return same
    found = difflib.get_close_matches(_folded(given), list(by_fold), n=1)
    return by_fold[found[0]] if found else None


def did_you_mean(given: str, known: Iterable[str]) -> str:
    """`did you mean 'research'?`, or "" when nothing is close: a clause for a message."""
    near = nearest(given, known)
    return f"did you mean {near!r}?" if near is not None else ""


__all__ = ["did_you_mean", "nearest"]
