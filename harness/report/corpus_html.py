"""The HTML page of a corpus check: the recording and checking versions side by side,
the groups with their meaning, and one row per state (templates/corpus.html.j2)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from killpoint.report.html import environment
from killpoint.values.durations import duration
from killpoint.values.sentences import count

if TYPE_CHECKING:
    from killpoint.corpus.check import CheckResult


@dataclass(frozen=True)
class GroupRow:
    name: str
    n: int
    failing: bool
    severity: str
    meaning: str


def view(result: CheckResult) -> dict[str, Any]:
    from killpoint.corpus import groups

    counts = result.counts()
    failing = [s for s in result.states if s.failing]
    headline = (
        f"✗ {count(len(failing), 'failing state')}"
        if failing
        else f"✓ {count(len(result.states), 'state')}, none failing"
    )
    per = result.seconds / len(result.states) if result.states else 0.0
    return {
        "corpus": str(result.corpus),
        "failing": bool(failing),
        "headline": headline,
        "counts": list(counts.items()),
        "seconds": f"{duration(result.seconds)} ({duration(per)} per state)",
        # Checked with the versions that recorded it: a control, no upgrade.
        "control": result.control,
        "versions": result.version_rows(),
        "groups": [
            GroupRow(g.name, counts[g.name], g.failing, g.severity, g.meaning)
            for g in groups.GROUPS
            if g.name in counts
        ],
        "states": sorted(result.states, key=lambda s: (groups.ORDER[s.group], s.id)),
    }


def render(result: CheckResult) -> str:
    return environment().get_template("corpus.html.j2").render(view=view(result))


__all__ = ["render", "view"]
