"""Scenario references: a built-in name, `random:SEED`, or `package.module:attribute`."""

from __future__ import annotations

from killpoint import scenarios
from killpoint.errors import ScenarioRefError
from killpoint.scenarios import Scenario, versions
from killpoint.values.import_paths import call_problem, import_attribute


def resolve_scenario(ref: str) -> Scenario:
    name, version = versions.split(ref)
    if version is not None:
        try:
            return versions.version_of(resolve_scenario(name), version)
        except versions.UnknownVersion as exc:
            raise ScenarioRefError(str(exc)) from None
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
        try:
            _, obj = import_attribute(ref)
        except (ImportError, AttributeError) as exc:
            raise ScenarioRefError(
                f"killpoint: scenario {ref!r} cannot be imported: {exc}"
            ) from None
        if not isinstance(obj, Scenario):
            # Called only when declared to build a scenario: a reference may come from a
            # report's cell id.
            problem = call_problem(obj, _scenario_class, "killpoint.Scenario")
            if problem is not None:
                raise ScenarioRefError(
                    f"killpoint: scenario {ref!r} {problem}; give a killpoint.Scenario or a "
                    "function without arguments that returns one"
                )
            obj = obj()
        if not isinstance(obj, Scenario):
            raise ScenarioRefError(f"killpoint: {ref!r} gave {obj!r}, not a scenarios.Scenario")
        return obj
    raise ScenarioRefError(
        f"killpoint: unknown scenario {ref!r}; choose from {', '.join(scenarios.BUILTINS)}, "
        "'random:SEED', or an import path 'package.module:SCENARIO'"
    )


def _scenario_class(cls: type) -> bool:
    return issubclass(cls, Scenario)
