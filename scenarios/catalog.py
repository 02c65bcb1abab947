"""The built-in scenarios by name."""

from __future__ import annotations

import re
from collections.abc import Callable

from .builtin import (
    cancel,
    confirm,
    flaky_model,
    hostile_content,
    large_output,
    long_chain,
    multi_run,
    parallel_fetch,
    research,
    reserve,
    session_state,
    side_effects,
    tool_error,
)
from .scenario import Scenario


class UnknownScenario(KeyError):
    """No built-in scenario has this name."""

    def __str__(self) -> str:
        return str(self.args[0])


BUILTINS: dict[str, Scenario] = {
    s.name: s
    for s in (
        research.SCENARIO,
        parallel_fetch.SCENARIO,
        long_chain.SCENARIO,
        tool_error.SCENARIO,
        confirm.SCENARIO,
        flaky_model.SCENARIO,
        cancel.SCENARIO,
        side_effects.SCENARIO,
        side_effects.IDEMPOTENT_SCENARIO,
        large_output.SCENARIO,
        hostile_content.SCENARIO,
        multi_run.SCENARIO,
        session_state.SCENARIO,
        reserve.SCENARIO,
    )
}


def _random(seed: int) -> Scenario:
    from .strategies import scenario_from_seed  # hypothesis is imported only when needed

    return scenario_from_seed(seed)


# Parameterised families, by name: "long-chain-5", "random-1234".
FAMILIES: dict[str, tuple[re.Pattern[str], Callable[[int], Scenario]]] = {
    "long-chain-N": (re.compile(r"long-chain-(\d{1,4})"), long_chain.long_chain),
    "random-SEED": (re.compile(r"random-(\d{1,19})"), _random),
}


def get(name: str) -> Scenario:
    """A built-in by name, or a member of a family (`long-chain-N`, `random-SEED`)."""
    try:
        return BUILTINS[name]
    except KeyError:
        pass
    for pattern, factory in FAMILIES.values():
        match = pattern.fullmatch(name)
        if match:
            try:
                return factory(int(match.group(1)))
            except ValueError as exc:
                raise UnknownScenario(f"killpoint: scenario {name!r}: {exc}") from None
    raise UnknownScenario(
        f"killpoint: unknown scenario {name!r}; choose from {', '.join(BUILTINS)} "
        f"(or {', '.join(FAMILIES)})"
    )


def describe() -> list[tuple[str, str]]:
    """(name, one-line description) of every built-in, in catalog order."""
    return [(s.name, s.description) for s in BUILTINS.values()]
