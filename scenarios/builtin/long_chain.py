"""long-chain: N sequential one-call batches, each step fed the previous step's result."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..conversation import Conversation
from ..scenario import Expected, Scenario
from ..script import Reply, Script
from ..tooling import ToolEnv

DEFAULT_STEPS = 20
SEED = 7


def step_value(step: int, carry: int) -> int:
    """What `step` computes: a pure function, so a lost or repeated result changes the end."""
    return (carry * 31 + step * 17) % 1_000_003


def tools(env: ToolEnv) -> list[Callable[..., Any]]:
    def step(step: int, carry: int) -> str:
        """Advance the chain by one step from the previous value."""
        return str(step_value(step, carry))

    return [step]


def final_text(n: int, value: int | str) -> str:
    return f"The chain of {n} steps ended at {value}."


def make_script(n: int) -> Script:
    def script(conversation: Conversation) -> Reply:
        turns = conversation.turns()
        carry: int | str = SEED
        if turns:
            last = turns[-1]
            output = last.output_of(last.calls[0]) if last.calls else None
            carry = int(output) if output is not None and output.isdigit() else "?"
        if len(turns) < n:
            if not isinstance(carry, int):
                return Reply.final(f"The chain broke after {len(turns)} steps.")
            return Reply.call("step", step=len(turns) + 1, carry=carry)
        return Reply.final(final_text(n, carry))

    return script


def long_chain(n: int = DEFAULT_STEPS) -> Scenario:
    """The chain with `n` steps; named `long-chain` for the default, `long-chain-{n}` otherwise."""
    if n < 1:
        raise ValueError(f"scenarios: long-chain needs at least 1 step, got {n}")
    value = SEED
    for k in range(1, n + 1):
        value = step_value(k, value)
    return Scenario(
        name="long-chain" if n == DEFAULT_STEPS else f"long-chain-{n}",
        description=f"{n} sequential one-call batches, each fed the previous result "
        "(many checkpoint boundaries)",
        script=make_script(n),
        tools=tools,
        inputs=(f"Run the chain for {n} steps.",),
        expected=(Expected(content=final_text(n, value), calls=("step",) * n),),
        mid_run_only=True,
    )


SCENARIO = long_chain()
