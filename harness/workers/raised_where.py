"""Which part of the adapter's contract a worker was running when it raised (its loading,
instrument(), driver(), or the run), told to the engine with the error and the innermost
line of the project's own code (killpoint.values.own_code).

A baseline that failed because an adapter's driver() raised was reported as a cell the
engine could not reach ("missed", a harness defect), and its traceback tail, cut to fit a
line, ended in killpoint's worker before the user's frame. A run that raised once it began
is the runtime's or its adapter's ("run-failed"); killpoint's own set-up is told apart.
"""

from __future__ import annotations

LOADING, INSTRUMENT, SETUP, DRIVER, RUN = (
    "loading the adapter",
    "the adapter's instrument()",
    "killpoint's set-up of the scripted model and the ledger",
    "the adapter's driver()",
    "the run",
)
# Parts of the contract an adapter's own code runs before any run begins.
ADAPTER_STAGES = frozenset({LOADING, INSTRUMENT, DRIVER})

__all__ = ["ADAPTER_STAGES", "DRIVER", "INSTRUMENT", "LOADING", "RUN", "SETUP"]
