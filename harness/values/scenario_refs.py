"""Scenario references: a built-in name, `random:SEED`, `cassette:PATH` (a recorded
agent), or `package.module:attribute`."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from killpoint import scenarios
from killpoint.errors import ScenarioRefError
from killpoint.scenarios import Expected, Scenario, versions
from killpoint.scenarios import cassette as cassettes
from killpoint.values.import_paths import call_problem, import_attribute, without_attribute
from killpoint.values.near import did_you_mean

CASSETTE = "cassette:"


def resolve_scenario(ref: str) -> Scenario:
    name, version = versions.split(ref)
    if version is not None:
        try:
            return versions.version_of(resolve_scenario(name), version)
        except versions.UnknownVersion as exc:
            raise ScenarioRefError(str(exc)) from None
    if ref in scenarios.BUILTINS:
        return scenarios.BUILTINS[ref]
    if ref.startswith(CASSETTE):
        return cassette_scenario(ref.removeprefix(CASSETTE))
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
    hint = without_attribute(ref, "SCENARIO", "scenario")
    if hint is not None:
        raise ScenarioRefError(f"killpoint: scenario {hint}")
    near = did_you_mean(ref, scenarios.BUILTINS)
    raise ScenarioRefError(
        f"killpoint: unknown scenario {ref!r}; {near + ' ' if near else ''}choose from "
        f"{', '.join(scenarios.BUILTINS)}, 'random:SEED', 'cassette:PATH' (a recording: "
        "`killpoint record`), or an import path 'package.module:SCENARIO'"
    )


_made: dict[tuple[str, int, int], Scenario] = {}


def _unscripted(conversation: object) -> scenarios.Reply:
    raise ScenarioRefError("killpoint: a cassette's replies come from the cassette")


def _no_tools(env: scenarios.ToolEnv) -> list[Callable[..., Any]]:
    return []  # the agent's own (killpoint.effect)


def cassette_scenario(path: str) -> Scenario:
    """The scenario a cassette is: the recorded inputs, the replies the recording got
    (served by history), and the end each run came to. Its tools, prompt and the rest are
    those of the scenario it was recorded with (none: the agent's own)."""
    ref = f"{CASSETTE}{path}"
    if not path:
        raise ScenarioRefError(
            f"killpoint: scenario {ref!r} names no file; give 'cassette:path/to/cassette.json'"
        )
    try:
        stat = os.stat(path)
        key = (str(Path(path).resolve()), stat.st_mtime_ns, stat.st_size)
        if key in _made:
            return _made[key]
        cassette = cassettes.load(path)
    except OSError as exc:
        raise ScenarioRefError(
            f"killpoint: scenario {ref!r}: {exc.strerror}; record one with "
            f"`killpoint record --runtime RUNTIME --out {path}`"
        ) from None
    except cassettes.CassetteError as exc:  # it says what to do already
        raise ScenarioRefError(f"killpoint: scenario {ref!r}: {exc}") from None
    base = resolve_scenario(cassette.scenario) if cassette.scenario else None
    expected = tuple(Expected(o.status, o.content, o.calls) for o in cassette.outcomes)
    recorded = cassette.recorded.get("runtime")
    description = (
        f"{len(cassette.interactions)} model requests recorded"
        + (f" with {recorded}" if recorded else "")
        + f" ({path})"
    )
    made = dataclasses.replace(
        base if base is not None else Scenario("", "", _unscripted, _no_tools),
        name=cassette.name,
        description=description,
        script=cassettes.Replayer(cassette, path),
        inputs=cassette.inputs,
        expected=expected,
    )
    if len(_made) >= 16:
        _made.clear()
    _made[key] = made
    return made


def _scenario_class(cls: type) -> bool:
    return issubclass(cls, Scenario)
