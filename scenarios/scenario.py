"""A scenario: tools, a scripted model, the input(s), and what the run must end with."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .behaviours import Replan
from .faults import Fault
from .script import Script
from .tooling import ToolEnv


@dataclass(frozen=True)
class Expected:
    """How one run of the scenario ends when nothing goes wrong."""

    status: str = "COMPLETED"
    content: str | None = None  # None: not checked
    calls: tuple[str, ...] | None = None  # tool names in call order; None: not checked


@dataclass(frozen=True)
class Scenario:
    """Define your own with the same API the built-ins use.

    `tools` builds plain Python callables from a ToolEnv (so their executions reach
    the ledger); `script` is a pure function of the conversation. One run per entry
    of `inputs`, all in one session.
    """

    name: str
    description: str
    script: Script
    tools: Callable[[ToolEnv], Sequence[Callable[..., Any]]]
    inputs: tuple[str, ...] = ("Go.",)
    expected: tuple[Expected, ...] = (Expected(),)
    instructions: str | None = None
    # Run only in modes that persist mid-run (a long chain adds nothing but lost work to a
    # mode that writes once at the end).
    mid_run_only: bool = False
    faults: tuple[Fault, ...] = ()
    # Tools that need the user's confirmation, and the answer the driver gives.
    confirm: Mapping[str, bool] = field(default_factory=dict)
    # How many times the driver continues a run that ended in ERROR.
    continue_on_error: int = 0
    # The driver cancels the run when the request for this model turn arrives.
    cancel_at_turn: int | None = None
    # SDK retries the model client needs (a scripted 429 is retried by the SDK).
    max_retries: int = 0
    # The rule its session state follows whatever happened to the run, checked on the
    # final session (normal form): the problems found, in plain sentences.
    state_invariant: Callable[[Mapping[str, Any]], list[str]] | None = None
    # The application's own version of this scenario (a crash-state corpus records it; a
    # variant that models a code change has another, scenarios.versions).
    version: str = "1"
    # What a model that re-plans a re-asked turn sends instead, per tool (the `replan`
    # behaviour, behaviours.py): the same intent in other words. Empty: nothing to replan.
    replan: Replan = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not self.inputs:
            raise ValueError(f"scenarios: scenario {self.name!r} needs at least one input")
        if len(self.expected) != len(self.inputs):
            raise ValueError(
                f"scenarios: scenario {self.name!r} has {len(self.inputs)} inputs but "
                f"{len(self.expected)} expected outcomes; give one Expected per input"
            )

    def build_tools(self, env: ToolEnv) -> list[Callable[..., Any]]:
        return [env.wrap(fn) for fn in self.tools(env)]
