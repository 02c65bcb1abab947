"""What a cassette's misses say: the first request a run made that the recording never saw.

The scripted model writes each request it had no recorded reply for to its state folder
(killpoint.scenarios.cassette.replay). In a cell, the first one is a finding of its own
(`history-unrecorded`): the resumed run asked the model something the uninterrupted run
never did, with both histories, line by line, as the evidence. In the baseline, any miss
makes the cassette unusable for the row (`cassette-stale`): stale when the agent's very
first request no longer matches, else an agent that changed later or is not deterministic.
"""

from __future__ import annotations

import os
from typing import Any

from killpoint.scenarios.cassette.replay import miss_lines, unrecorded
from killpoint.values.findings import Finding


def _facts(miss: dict[str, Any]) -> dict[str, Any]:
    recorded, asked = miss_lines(miss)
    at = int(miss.get("at", 0))
    return {
        "turn": miss.get("turn"),
        "line": at + 1,
        "asked": asked[at] if at < len(asked) else None,
        "recorded": recorded[at] if at < len(recorded) else None,
    }


def side_by_side(miss: dict[str, Any]) -> tuple[str, ...]:
    """The two histories, line by line, the first line that differs marked `>>`."""
    recorded, asked = miss_lines(miss)
    at = int(miss.get("at", 0))
    rows = ["   recorded (nearest history) | asked (this request)"]
    for n in range(max(len(recorded), len(asked))):
        left = recorded[n] if n < len(recorded) else ""
        right = asked[n] if n < len(asked) else ""
        mark = ">>" if n == at else "  "
        rows.append(f"{mark} {left[:120]} | {right[:120]}")
    return tuple(rows)


def history_findings(state_dir: str | os.PathLike[str]) -> list[Finding]:
    """The cell's first unrecorded request, as one finding (the others are counted in it:
    what a run asks after a miss follows from the miss)."""
    misses = unrecorded(state_dir)
    if not misses:
        return []
    first = misses[0]
    recorded, asked = miss_lines(first)
    facts = {**_facts(first), "more": len(misses) - 1}
    return [
        Finding.of(
            "history-unrecorded",
            facts,
            path=f"model.turns[{first.get('turn')}]",
            expected_value=recorded,
            actual_value=asked,
            sides=("recording (nearest history)", "request of the resumed run"),
            evidence=side_by_side(first),
        )
    ]


# What a run answered by a miss holds otherwise than the baseline: the miss explains it, so
# it is said first among them (a contract's own finding, say a run continued after it had
# ended, stays before it: it is why the model was asked at all).
EXPLAINED = frozenset(
    {
        "runs-differ", "status-differs", "tool-executions-lost", "tool-executions-extra",
        "tool-executions-reordered", "tool-executions-differ", "messages-differ",
        "state-differs", "usage-differs", "run-differs", "failures-differ",
        "outcome-unexpected", "effect-lost", "effect-foreign", "unresumable",
    }
)  # fmt: skip


def with_history(findings: list[Finding], state_dir: str | os.PathLike[str]) -> list[Finding]:
    """`findings` with the cell's first unrecorded request (if any) placed before the first
    finding it explains."""
    found = history_findings(state_dir)
    if not found:
        return findings
    at = next((n for n, f in enumerate(findings) if f.kind in EXPLAINED), len(findings))
    return [*findings[:at], *found, *findings[at:]]


def stale(state_dir: str | os.PathLike[str]) -> str | None:
    """Why the row's baseline cannot be replayed from its cassette (None: every request
    it made was recorded)."""
    misses = unrecorded(state_dir)
    if not misses:
        return None
    first = misses[0]
    facts = {**_facts(first), "first": first.get("nearest") is not None and _is_first(first)}
    return Finding.of("cassette-stale", facts).sentence


def _is_first(miss: dict[str, Any]) -> bool:
    """Whether the miss is the run's first request (its history holds one user message and
    nothing the model said)."""
    items = (miss.get("history") or {}).get("items") or []
    return all(item and item[0] == "user" for item in items)


__all__ = ["EXPLAINED", "history_findings", "side_by_side", "stale", "with_history"]
