"""`--fail-on high|medium|low`: which severities fail the run (exit 1).

Without it the run fails on an unexpected verdict, as it always has (every kind that names
a verdict is of high severity). With it, on any group of findings, not accepted, whose
severity (the HARMS table in killpoint.values.findings) is the threshold or above,
whether or not it names a verdict: `medium` adds what a power cut took back
(`checkpoints-lost`), `low` adds reorderings, usage and bookkeeping. The option itself
(its choices, how it is read) is killpoint.engine.option_table's.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from killpoint.values.findings import SEVERITIES

if TYPE_CHECKING:
    from killpoint.judge.groups import Group


def at_or_above(severity: str, threshold: str) -> bool:
    return SEVERITIES.index(severity) <= SEVERITIES.index(threshold)


def failing_groups(groups: Iterable[Group], threshold: str) -> list[Group]:
    """The groups that fail a run held to `threshold`."""
    return [g for g in groups if not g.accepted and at_or_above(g.severity, threshold)]


def spared(groups: Iterable[Group], threshold: str) -> list[Group]:
    """Groups that would fail the run by their verdict, but stay below the threshold."""
    return [
        g
        for g in groups
        if not g.accepted and g.verdict != "ok" and not at_or_above(g.severity, threshold)
    ]


__all__ = ["at_or_above", "failing_groups", "spared"]
