"""Where in a worker an exception came from, in the words a user acts on: which part of
the adapter's contract was running (its loading, instrument(), driver(), or the run), and
the innermost line of the user's own code in the traceback.

A baseline that failed because an adapter's driver() raised was reported as a cell the
engine could not reach ("missed", a harness defect), and its traceback tail, cut to fit a
line, ended in killpoint's worker before the user's frame.
"""

from __future__ import annotations

import os
import sysconfig
import traceback
from types import TracebackType

LOADING, INSTRUMENT, DRIVER, RUN = (
    "loading the adapter",
    "the adapter's instrument()",
    "the adapter's driver()",
    "the run",
)
# Parts of the contract an adapter's own code runs before any run begins.
ADAPTER_STAGES = frozenset({LOADING, INSTRUMENT, DRIVER})

_LIBRARIES = tuple(
    os.path.realpath(p) + os.sep
    for p in {sysconfig.get_path(k) for k in ("stdlib", "platstdlib", "purelib", "platlib")}
    if p
)


def _harness(module: str) -> bool:
    """killpoint's own code, not the runtime under test (the reference runtime is
    killpoint.runtime; an adapter of killpoint's names the runtime it drives)."""
    return module == "killpoint" or (
        module.startswith("killpoint.")
        and not module.startswith(("killpoint.runtime", "killpoint.adapters"))
    )


def innermost(tb: TracebackType | None) -> str | None:
    """`path:line, in function` of the innermost frame outside killpoint's harness, the
    standard library and installed packages (a project's own code); failing that, of the
    innermost frame outside the harness; None when every frame is the harness's."""
    outside: list[tuple[str, int, str]] = []
    for frame, line in traceback.walk_tb(tb):
        module = str(frame.f_globals.get("__name__", ""))
        if not _harness(module):
            outside.append((frame.f_code.co_filename, line, frame.f_code.co_name))
    if not outside:
        return None
    own = [f for f in outside if not os.path.realpath(f[0]).startswith(_LIBRARIES)]
    path, line, name = (own or outside)[-1]
    try:
        shown = os.path.relpath(path)
        path = shown if not shown.startswith("..") else path
    except ValueError:
        pass
    return f"{path}:{line}, in {name}"


__all__ = ["ADAPTER_STAGES", "DRIVER", "INSTRUMENT", "LOADING", "RUN", "innermost"]
