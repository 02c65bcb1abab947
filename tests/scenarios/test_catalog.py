# ruff: noqa: SIM300 - tests assert `expected == actual`
"""The catalog and `killpoint scenarios`."""

from __future__ import annotations

import pytest

from killpoint import scenarios
from killpoint.cli.main import main
from killpoint.scenarios.builtin import long_chain

NAMES = [
    "research",
    "parallel-fetch",
    "long-chain",
    "tool-error",
    "confirm",
    "flaky-model",
    "cancel",
    "side-effects",
    "side-effects-idempotent",
    "large-output",
    "hostile-content",
    "multi-run",
    "session-state",
    "reserve",
]


def test_killpoint_scenarios_lists_every_builtin(capsys: pytest.CaptureFixture[str]) -> None:
    """`killpoint scenarios` prints one line per built-in: its name, then its description."""
    assert 0 == main(["scenarios"])
    lines = capsys.readouterr().out.splitlines()
    expected = [(name, dict(scenarios.describe())[name]) for name in NAMES]
    actual = [(line.split()[0], line.split(None, 1)[1]) for line in lines]
    assert expected == actual


def test_an_unknown_name_lists_the_choices() -> None:
    """get() of a typo raises UnknownScenario naming every built-in and the families."""
    with pytest.raises(scenarios.UnknownScenario) as info:
        scenarios.get("reserch")
    message = str(info.value)
    assert [True] * (len(NAMES) + 2) == [
        n in message for n in [*NAMES, "long-chain-N", "random-SEED"]
    ]


def test_families_build_members_by_name() -> None:
    """long-chain-N and random-SEED are built on demand; the default chain is registered."""
    three, rnd = scenarios.get("long-chain-3"), scenarios.get("random-42")
    expected = (("step",) * 3, "random-42", 20)
    actual = (
        three.expected[0].calls,
        rnd.name,
        len(scenarios.get("long-chain").expected[0].calls or ()),
    )
    assert expected == actual
    assert long_chain.SCENARIO is scenarios.get("long-chain")


def test_a_bad_family_member_is_an_unknown_scenario() -> None:
    """long-chain-0 is refused with the factory's reason."""
    with pytest.raises(scenarios.UnknownScenario, match="at least 1 step"):
        scenarios.get("long-chain-0")
