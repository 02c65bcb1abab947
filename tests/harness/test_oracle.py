"""The oracle: the first difference between two sessions, and effects counted against a
baseline's."""

# ruff: noqa: SIM300
from __future__ import annotations

from collections import Counter

from killpoint.oracle import Difference, comparable, count_effects, first_difference

CHARGE = ("charge_card", '{"cents":500}')
EMAIL = ("send_email", '{"to":"a@example.com"}')
SMS = ("send_sms", '{"to":"+100"}')


def test_equal_sessions_have_no_difference() -> None:
    session = {"state": {"n": 1}, "runs": {"r1": {"status": "COMPLETED", "messages": [1, 2]}}}
    assert None is first_difference(comparable(session), comparable(dict(session)))


def test_the_first_difference_names_its_path_and_both_values() -> None:
    base = {"runs": [{"status": "COMPLETED", "messages": ["a", "b", "c"]}]}
    resumed = {"runs": [{"status": "COMPLETED", "messages": ["a", "x", "y"]}]}

    assert Difference("session.runs[0].messages[1]", "b", "x") == first_difference(base, resumed)


def test_a_shorter_list_and_a_missing_key_are_differences() -> None:
    assert "session.m[2] (length 3 vs 2)" == first_difference({"m": [1, 2, 3]}, {"m": [1, 2]}).path
    assert Difference("session.extra", None, 1) == first_difference({}, {"extra": 1})


def test_long_values_are_clipped_in_the_report_not_in_the_comparison() -> None:
    long = "x" * 5000
    diff = first_difference({"c": long}, {"c": long + "y"})
    assert diff is not None
    assert diff.to_json()["baseline"].endswith("... (5000 chars)")
    assert long + "y" == diff.actual


def test_effects_repeated_missing_and_foreign_are_told_apart() -> None:
    """A repeat of a baseline effect is a duplicate; an effect the baseline never had is
    foreign (the run diverged), not a duplicate; a baseline effect absent is missing."""
    baseline = Counter({CHARGE: 1, EMAIL: 1})
    actual = Counter({CHARGE: 3, SMS: 1})

    counted = count_effects(baseline, actual)

    assert 2 == counted.duplicates
    assert [(*CHARGE, 2)] == counted.repeated
    assert [(*SMS, 1)] == counted.foreign
    assert [EMAIL] == counted.missing


def test_the_same_effects_count_nothing() -> None:
    counted = count_effects(Counter({CHARGE: 2}), Counter({CHARGE: 2}))
    assert (0, [], [], []) == (
        counted.duplicates,
        counted.missing,
        counted.repeated,
        counted.foreign,
    )
