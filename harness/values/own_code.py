"""The innermost line of a project's own code in a traceback: what a user fixes when
their module raised while killpoint imported it (killpoint.values.import_paths) or when a
worker raised (killpoint.workers.raised_where).

"Own" leaves out killpoint's harness, the standard library, installed packages and code
with no file (importlib's frozen frames); the reference runtime (killpoint.runtime) and
killpoint's adapters count as the code under test.
"""

from __future__ import annotations

import os
import sysconfig
import traceback
from types import TracebackType

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


def shown_path(path: str) -> str:
    """`path` relative to the current folder when it is under it."""
    try:
        shown = os.path.relpath(path)
    except ValueError:
        return path
    return shown if not shown.startswith("..") else path


def innermost(tb: TracebackType | None) -> str | None:
    """`path:line, in function` of the innermost frame of the project's own code; failing
    that, of the innermost frame with a file outside killpoint's harness; None when there
    is none."""
    outside: list[tuple[str, int, str]] = []
    for frame, line in traceback.walk_tb(tb):
        path = frame.f_code.co_filename
        if not path.startswith("<") and not _harness(str(frame.f_globals.get("__name__", ""))):
            outside.append((path, line, frame.f_code.co_name))
    if not outside:
        return None
    own = [f for f in outside if not os.path.realpath(f[0]).startswith(_LIBRARIES)]
    path, line, name = (own or outside)[-1]
    return f"{shown_path(path)}:{line}, in {name}"


def raised_by_harness(tb: TracebackType | None) -> bool:
    """Whether the exception was raised in killpoint's harness itself (its innermost frame
    is the harness's): then nothing says it is the runtime's doing."""
    frames = list(traceback.walk_tb(tb))
    return bool(frames) and _harness(str(frames[-1][0].f_globals.get("__name__", "")))


__all__ = ["innermost", "raised_by_harness", "shown_path"]
