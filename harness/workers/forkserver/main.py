"""Imported by the forkserver: it takes on its parent's main module, once, for every worker.

multiprocessing gives each child the parent's main module (a target defined there must
be found): the child re-runs it from its source as `__mp_main__`, by name for a parent
started as `python -m NAME`, by path for a script (the `killpoint` and `pytest`
commands are scripts), unless the process it was forked from already has it. The
forkserver's own `__main__` preload never does this on CPython 3.11 to 3.13: it looks
for a `main_path` key that the preparation data names `init_main_from_path`. So every
worker paid for it: 8 ms for the benchmarks' `-m` module, a whole pytest import under
the `pytest` command. Here the forkserver does it once, and each child finds it done.

The parent says which main module in MAIN_ENV (killpoint.workers.processes.main_module), with
its own pid: the variable is inherited by everything the parent starts, and only its
own forkserver (a direct child) may act on it. Only the forkserver imports this module.
"""

from __future__ import annotations

import importlib
import json
import os
import sys
from multiprocessing import spawn
from typing import Any

from killpoint.workers.processes import MAIN_ENV


def meant_for_me(value: str | None) -> dict[str, Any] | None:
    """The main module MAIN_ENV names, if this process's parent is the one that set it."""
    if not value:
        return None
    main: dict[str, Any] = json.loads(value)
    return main if main.get("parent") == os.getppid() else None


def adopt(main: dict[str, Any]) -> None:
    try:
        if "path" in main:
            # What a child would do, done here: run as `__mp_main__`, guard shut.
            spawn.import_main_path(main["path"])
        else:
            # Imported under its own name, NAME's `if __name__ == "__main__":` stays shut.
            sys.modules["__main__"] = importlib.import_module(main["name"])
    except Exception:
        # Left to the children, as before: each re-runs it and reports its own error
        # (a forkserver that died while preloading would explain nothing).
        return


_main = meant_for_me(os.environ.get(MAIN_ENV))
if _main is not None:
    adopt(_main)
