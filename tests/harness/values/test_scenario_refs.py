"""A scenario reference that names no scenario: the refusal names what was most likely
meant, or the form an import path needs."""

from __future__ import annotations

import pytest

from killpoint.errors import ScenarioRefError
from killpoint.values.scenario_refs import resolve_scenario


def refusal(ref: str) -> str:
    with pytest.raises(ScenarioRefError) as caught:
        resolve_scenario(ref)
    return str(caught.value)


@pytest.mark.parametrize(
    ("ref", "meant"), [("reseach", "research"), ("side_effects", "side-effects")]
)
def test_a_misspelt_built_in_gets_the_one_it_meant_before_the_choices(ref: str, meant: str) -> None:
    assert refusal(ref).startswith(
        f"killpoint: unknown scenario {ref!r}; did you mean {meant!r}? choose from research, "
    )


def test_a_name_nothing_is_near_gets_the_choices_alone() -> None:
    assert refusal("nosuch").startswith("killpoint: unknown scenario 'nosuch'; choose from ")


def test_a_file_path_without_its_attribute_gets_the_dotted_form() -> None:
    assert refusal("shop/flows.py") == (
        "killpoint: scenario 'shop/flows.py' is a file path, not a module, and names no "
        "scenario; give the module with dots and the scenario's name after ':', e.g. "
        "'shop.flows:SCENARIO'"
    )


def test_a_misspelt_attribute_gets_the_one_it_meant() -> None:
    assert refusal("tests.harness.scenarios_for_tests:BLOKING") == (
        "killpoint: scenario 'tests.harness.scenarios_for_tests:BLOKING' cannot be imported: "
        "'tests.harness.scenarios_for_tests' has no attribute 'BLOKING'; did you mean "
        "'BLOCKING'?"
    )
