"""Imported by the forkserver: it adopts the main module of a parent run as `python -m NAME`.

multiprocessing gives every child the parent's main module (a target defined there must
be found): unless the forkserver's own `__main__` already is NAME, each child re-runs
NAME from its source as `__mp_main__`. Preloading `__main__` covers a parent started
from a path only; for one started by name this module imports NAME once, here, and
makes it the forkserver's `__main__`, so no worker executes (and, where bytecode is not
cached, compiles) the parent's main module again: about 8 ms of every worker otherwise.
The parent names NAME in MAIN_ENV (harness.processes).
"""

from __future__ import annotations

import importlib
import os
import sys

MAIN_ENV = "KILLPOINT_FORKSERVER_MAIN"


def adopt(name: str) -> None:
    # Imported under its own name, NAME's `if __name__ == "__main__":` block stays shut,
    # as it does when a child re-runs it as `__mp_main__`.
    try:
        module = importlib.import_module(name)
    except Exception:
        # Left to the children, as before: each re-runs NAME and reports its own error
        # (a forkserver that died while preloading would explain nothing).
        return
    sys.modules["__main__"] = module


if os.environ.get(MAIN_ENV):
    adopt(os.environ[MAIN_ENV])
