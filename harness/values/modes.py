"""Checkpoint modes as a runtime declares them: its own names, a line of meaning each, and
the facts the engine plans with.

A mode is the runtime's: the reference runtime offers `runs`, `tool-batch` and `tool`;
LangGraph offers its durability levels. What the engine needs to know of one:
- `persists_mid_run`: whether anything of a run is durable before it ends (a mode that
  writes only at the end loses a run killed mid-run, by design; check-adapter holds the
  declaration against the baseline's trace);
- `results_per_call`: whether each tool call's result is durable on its own as soon as the
  call returns, rather than with its whole batch (a kill mid-batch then keeps the calls
  that finished, and the store holds one more checkpoint per finished call);
- `tool_results_durable`: whether a tool call's result is ever written before the run
  ends. False for a runtime that records each model reply mid-run but keeps the tools'
  results only in memory (pydantic-ai's default under DBOS): a recovery replays the
  replies and runs every earlier tool call again, each such repeat within the bound since
  no result of it was durable. Such a mode persists mid-run, after its model turns;
- `writes_lag`: whether checkpoint writes land behind the run, in the background while
  later steps run, so that how many have landed at a point inside a step (a model
  request, a tool call) and where each lands in the run differ from one run to the next.
  The engine then confirms such a point from what the worker announced as landed and
  what the store holds (never from the baseline's count there), offers the takeover
  points by the store's count, and plans only points that both baseline runs offer.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from killpoint.errors import ModeError

# The facts the engine plans with (see the module's docstring), each a bool.
FLAGS = ("persists_mid_run", "results_per_call", "tool_results_durable", "writes_lag")


@dataclass(frozen=True)
class Mode:
    """One checkpoint mode of a runtime. `unavailable` says why the runtime cannot run it
    (declared to be shown in the report when asked for; such a mode is never run)."""

    name: str
    meaning: str
    persists_mid_run: bool = True
    results_per_call: bool = False
    writes_lag: bool = False
    unavailable: str | None = None
    tool_results_durable: bool = True

    def __post_init__(self) -> None:
        if not self.name or any(c in self.name for c in "/,+ \t\n"):
            raise ModeError(
                f"killpoint: mode name {self.name!r} must be non-empty, without '/', ',', '+' "
                "or spaces (it is part of cell ids and option lists)"
            )
        if not self.meaning or "\n" in self.meaning:
            raise ModeError(f"killpoint: mode {self.name!r} needs its meaning in one line")
        for flag in FLAGS:
            value = getattr(self, flag)
            if not isinstance(value, bool):
                raise ModeError(
                    f"killpoint: mode {self.name!r}: {flag} must be True or False, got {value!r}"
                )
        if self.results_per_call and not self.tool_results_durable:
            raise ModeError(
                f"killpoint: mode {self.name!r} declares results_per_call=True and "
                "tool_results_durable=False: a result durable per call is durable; drop one"
            )

    @property
    def runnable(self) -> bool:
        return self.unavailable is None


# The reference runtime's modes (and the names agno shares with it).
RUNS = Mode(
    "runs",
    "persisted only at terminal states: a run killed mid-run leaves no record of itself",
    persists_mid_run=False,
)
TOOL_BATCH = Mode(
    "tool-batch", "persisted after every tool batch (the post-gather barrier) and at the end"
)
TOOL = Mode(
    "tool",
    "persisted after every tool result too: a resume reruns only the calls without one",
    results_per_call=True,
)
REFERENCE_MODES: tuple[Mode, ...] = (RUNS, TOOL_BATCH, TOOL)


def runnable(modes: Iterable[Mode]) -> tuple[str, ...]:
    """Names of the modes a runtime can run, in its order."""
    return tuple(m.name for m in modes if m.runnable)


def find(modes: Sequence[Mode], name: str) -> Mode | None:
    return next((m for m in modes if m.name == name), None)


__all__ = ["FLAGS", "REFERENCE_MODES", "RUNS", "TOOL", "TOOL_BATCH", "Mode", "find", "runnable"]
