"""Accepted groups a campaign did not meet: what that says depends on what it ran."""

from __future__ import annotations

from killpoint.judge.groups import NO_LONGER, NOT_EXERCISED, Accepted, unmet

GONE = Accepted("effect-lost:send_email:ledger", "fixed in 2.1")


def test_a_narrowed_campaign_says_not_exercised_and_only_a_whole_one_no_longer_occurs() -> None:
    assert unmet([], {GONE.group: GONE}, "--points kills") == [(GONE, NOT_EXERCISED)]
    assert unmet([], {GONE.group: GONE}, None) == [(GONE, NO_LONGER)]
    assert "fixed" not in NOT_EXERCISED and "fixed" not in NO_LONGER
