"""The name a typo most likely meant: one answer for every list of choices."""

# ruff: noqa: SIM300
from __future__ import annotations

import pytest

from killpoint.values.near import did_you_mean, nearest

SCENARIOS = ("research", "side-effects", "side-effects-idempotent", "reserve")


@pytest.mark.parametrize(
    ("given", "meant"),
    [
        ("reseach", "research"),  # a letter left out
        ("side_effects", "side-effects"),  # a Python name for an option's name
        ("Research", "research"),  # case
        ("side-efects-idempotent", "side-effects-idempotent"),
    ],
)
def test_a_typo_gets_the_name_it_meant(given: str, meant: str) -> None:
    assert meant == nearest(given, SCENARIOS)


def test_nothing_close_gets_no_guess() -> None:
    assert None is nearest("nosuch", SCENARIOS)
    assert "" == did_you_mean("nosuch", SCENARIOS)


def test_the_name_refused_is_never_suggested_back() -> None:
    """`research` refused (not a mode of this runtime, say) is not 'meant' as itself."""
    assert None is nearest("research", ["research"])


def test_the_clause_quotes_the_name() -> None:
    assert "did you mean 'research'?" == did_you_mean("reseach", SCENARIOS)
