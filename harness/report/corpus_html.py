"""The HTML page of a corpus check: the recording and checking versions side by side,
the groups with their meaning, and one row per state (templates/corpus.html.j2).

Everything on it but killpoint's own words comes from the corpus (a manifest's library
names, a state's id and scenario) or from the run (a sentence): escaped for HTML by the
template, and made visible here first (killpoint.values.shown.visible), so that no
control byte (ESC, BEL) reaches the page raw."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from killpoint.report.html import environment
from killpoint.values.durations import duration
from killpoint.values.sentences import count
from killpoint.values.shown import visible

if TYPE_CHECKING:
    from killpoint.corpus.check import CheckResult, StateResult


@dataclass(frozen=True)
class StateRow:
    """A state's row, its texts visible."""

    group: str
    id: str
    recorded_as: str
    checked_as: str
    sentence: str
    details: list[str]
    failing: bool
    failed_before: bool
    recorded_verdict: str


def state_row(s: StateResult) -> StateRow:
    return StateRow(
        group=visible(s.group),
        id=visible(s.id),
        recorded_as=visible(s.recorded_as),
        checked_as=visible(s.checked_as),
        sentence=visible(s.sentence),
        details=[visible(d) for d in s.details],
        failing=s.failing,
        failed_before=s.failed_before,
        recorded_verdict=visible(s.recorded_verdict),
    )


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
        "corpus": visible(str(result.corpus)),
        "failing": bool(failing),
        "headline": headline,
        "counts": list(counts.items()),
        "seconds": f"{duration(result.seconds)} ({duration(per)} per state)",
        # Checked with the versions that recorded it: a control, no upgrade.
        "control": result.control,
        "versions": [
            (visible(name), visible(recorded), visible(checked), changed)
            for name, recorded, checked, changed in result.version_rows()
        ],
        "groups": [
            GroupRow(g.name, counts[g.name], g.failing, g.severity, g.meaning)
            for g in groups.GROUPS
            if g.name in counts
        ],
        "states": [
            state_row(s) for s in sorted(result.states, key=lambda s: (groups.ORDER[s.group], s.id))
        ],
    }


def render(result: CheckResult) -> str:
    return environment().get_template("corpus.html.j2").render(view=view(result))


__all__ = ["render", "view"]
