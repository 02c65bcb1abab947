"""Scenario references: a built-in name, `random:SEED`, or `package.module:attribute`."""

from __future__ import annotations

import importlib
from typing import Any

from killpoint import scenarios
from killpoint.errors import KillpointError
from killpoint.scenarios import Scenario


class ScenarioRefError(KillpointError, ValueError):
    """A scenario reference that names no scenario."""


def resolve_scenario(ref: str) -> Scenario:
    if ref in scenarios.BUILTINS:
        return scenarios.BUILTINS[ref]
    if ref.startswith("random:"):
        seed = ref.partition(":")[2]
        if not seed.isdigit():
            raise ScenarioRefError(
                f"killpoint: scenario {ref!r} needs an integer seed, e.g. 'random:42'"
            )
        from killpoint.scenarios.strategies import scenario_from_seed

        return scenario_from_seed(int(seed))
    if ":" in ref:
        module_name, _, attr = ref.partition(":")
        try:
            obj: Any = importlib.import_module(module_name)
            for part in attr.split("."):
                obj = getattr(obj, part)
        except (ImportError, AttributeError) as exc:
            raise ScenarioRefError(
                f"killpoint: scenario {ref!r} cannot be imported: {exc}"
            ) from None
        scenario = obj() if callable(obj) and not isinstance(obj, Scenario) else obj
        if not isinstance(scenario, Scenario):
            raise ScenarioRefError(
                f"killpoint: {ref!r} gave {scenario!r}, not a scenarios.Scenario"
            )
        return scenario
    raise ScenarioRefError(
        f"killpoint: unknown scenario {ref!r}; choose from {', '.join(scenarios.BUILTINS)}, "
        "'random:SEED', or an import path 'package.module:SCENARIO'"
    )
