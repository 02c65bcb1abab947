"""--fail-on: the groups that fail a run held to a severity, verdict or not."""

from __future__ import annotations

from dataclasses import replace

from killpoint.cli.fail_on import failing_groups, spared
from tests.harness.cli.test_github import group

HIGH = group()
MEDIUM = replace(group(2), kind="checkpoints-lost", severity="medium", verdict="ok")
LOW = replace(group(3), kind="inconsistency", severity="low", verdict="ok")
ACCEPTED_HIGH = replace(group(4), accepted="known")


class TestThreshold:
    def test_each_threshold_takes_its_severity_and_above(self) -> None:
        """Accepted groups never fail; low ones only under --fail-on low."""
        every = [HIGH, MEDIUM, LOW, ACCEPTED_HIGH]
        assert failing_groups(every, "high") == [HIGH]
        assert failing_groups(every, "medium") == [HIGH, MEDIUM]
        assert failing_groups(every, "low") == [HIGH, MEDIUM, LOW]

    def test_an_unexpected_group_below_the_threshold_is_said_to_be_spared(self) -> None:
        """A verdict-naming group of medium severity under --fail-on high does not fail the
        run, and the command says so (spared)."""
        medium_verdict = replace(MEDIUM, verdict="lost")
        assert [medium_verdict] == spared([HIGH, medium_verdict, LOW], "high")
        assert spared([HIGH, medium_verdict], "medium") == []
