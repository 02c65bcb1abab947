"""`effect`: the user's own tools in killpoint's ledger.

A scenario's tools are wrapped by the adapter (ToolEnv). An agent with tools of its own
(crash-tested from a cassette) marks each tool that does something in the world with
`@killpoint.effect`: while killpoint runs the agent, in a worker or in `killpoint record`,
every real execution is recorded in the run's ledger and passes the tool's gates, so that
lost and repeated effects are counted as for a built-in scenario's tools and a kill can
land inside a batch; anywhere else the decorator calls the tool and does nothing more.

The ledger is named by the environment (LEDGER_VARIABLE), so a tool that runs in a child
process of the worker records into the same ledger. `@intent(...)` and `@idempotent` go
below or above it, as on a scenario's tools.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, TypeVar

from .ledger import Ledger
from .tooling import EFFECT, ledgered

LEDGER_VARIABLE = "KILLPOINT_LEDGER"  # the path of the ledger of the run in progress
SCENARIO_VARIABLE = "KILLPOINT_SCENARIO"  # the scenario each record names

F = TypeVar("F", bound=Callable[..., Any])


def current_ledger() -> Ledger | None:
    """The ledger of the run killpoint is running in this process (None: none is)."""
    path = os.environ.get(LEDGER_VARIABLE)
    if not path:
        return None
    return Ledger(path, os.environ.get(SCENARIO_VARIABLE, "agent"))


def use_ledger(ledger: Ledger) -> dict[str, str]:
    """The environment that makes `ledger` the one `effect` records into (set it in a
    worker before the run)."""
    return {LEDGER_VARIABLE: str(ledger.path), SCENARIO_VARIABLE: ledger.scenario}


def effect(fn: F) -> F:
    """Record every real execution of the tool `fn` in killpoint's ledger while killpoint
    runs the agent (a plain call anywhere else). Same name, signature and docstring, so an
    agent framework builds the same tool schema from it; sync or async."""
    if not callable(fn):
        raise TypeError(f"killpoint.effect: decorate a function, not {fn!r}")
    wrapped = ledgered(fn, current_ledger)
    setattr(wrapped, EFFECT, fn)
    return wrapped  # type: ignore[return-value]


__all__ = ["LEDGER_VARIABLE", "SCENARIO_VARIABLE", "current_ledger", "effect", "use_ledger"]
