"""The built-in scenarios by name."""

from __future__ import annotations

from .builtin import research
from .scenario import Scenario


class UnknownScenario(KeyError):
    """No built-in scenario has this name."""

    def __str__(self) -> str:
        return str(self.args[0])


BUILTINS: dict[str, Scenario] = {s.name: s for s in (research.SCENARIO,)}


def get(name: str) -> Scenario:
    try:
        return BUILTINS[name]
    except KeyError:
        raise UnknownScenario(
            f"killpoint: unknown scenario {name!r}; choose from {', '.join(BUILTINS)}"
        ) from None


def describe() -> list[tuple[str, str]]:
    """(name, one-line description) of every built-in, in catalog order."""
    return [(s.name, s.description) for s in BUILTINS.values()]
