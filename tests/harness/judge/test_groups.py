# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Groups of findings: accepted ones a campaign did not meet (what that says depends on
what it ran), the verdicts a group's cells have, and what an accepted group covers."""

from __future__ import annotations

from typing import Any

from killpoint.judge import contract
from killpoint.judge.groups import (
    NO_LONGER,
    NOT_EXERCISED,
    Accepted,
    apply_accepted,
    group_findings,
    unmet,
)
from killpoint.values.cell import CellResult
from killpoint.values.findings import Finding

GONE = Accepted("effect-lost:send_email:ledger", "fixed in 2.1")


def test_a_narrowed_campaign_says_not_exercised_and_only_a_whole_one_no_longer_occurs() -> None:
    assert unmet([], {GONE.group: GONE}, "--points kills") == [(GONE, NOT_EXERCISED)]
    assert unmet([], {GONE.group: GONE}, None) == [(GONE, NO_LONGER)]
    assert "fixed" not in NOT_EXERCISED and "fixed" not in NO_LONGER


# -- the verdict a group's badge shows ----------------------------------------------------------


def _cell(point: str, *found: Any, verdict: str) -> CellResult:
    cell_id = f"agno/cancel/tool-batch/sqlite/{point}"
    return CellResult(
        id=cell_id, runtime="agno", scenario="cancel", mode="tool-batch", store="sqlite",
        schedule=[point], verdict=verdict, expected=False,
        findings=[f.to_json() for f in found], replay=f"killpoint replay {cell_id}",
    )  # fmt: skip


def test_a_groups_badge_is_the_verdict_its_cells_have() -> None:
    """Issue 56: a group's badge named its kind's verdict (`lost`) while its cells were
    `corrupt`; the group carries its cells' verdicts, most first, and the badge is theirs."""
    lost = Finding("acknowledged-lost", "returned COMPLETED but the store says RUNNING",
                   path="runs[0].status")  # fmt: skip
    stale = Finding("stale-write", "the stale worker wrote after the takeover", path="store")
    cells = [
        _cell("lock-held:1", lost, verdict="lost"),
        _cell("sigstop-writing:2", lost, stale, verdict="corrupt"),
        _cell("sigstop-writing:3", lost, stale, verdict="corrupt"),
    ]
    (group,) = [g for g in group_findings(cells) if g.kind == "acknowledged-lost"]
    assert {"corrupt": 2, "lost": 1} == group.verdicts
    assert "corrupt" == group.badge
    assert {"corrupt": 2, "lost": 1} == group.to_json()["verdicts"]


def test_a_stale_workers_answer_over_a_stored_run_is_not_a_lost_run() -> None:
    """Issue 56: the `acknowledged-lost` ("lost") group held corrupt cells whose run is in
    the store: a stale worker returned CANCELLED after the takeover, the store holds the
    takeover's COMPLETED. The run is not lost: it is the stale worker's answer that is not
    stored, a finding of its own kind; a run the store does not hold at all stays lost."""
    session = {"state": {}, "runs": {"r1": {"status": "COMPLETED"}}}
    acks = [{"run_id": "r1", "status": "CANCELLED"}]
    (stale,) = contract.acknowledged(acks, session, who="the stale worker")
    assert ("stale-acknowledged", "duplicated") == (stale.kind, stale.verdict)
    assert "the store holds COMPLETED, the takeover's" in stale.sentence
    (lost,) = contract.acknowledged(acks, {"state": {}, "runs": {}}, who="the stale worker")
    assert ("acknowledged-lost", "lost") == (lost.kind, lost.verdict)
    (own,) = contract.acknowledged(acks, session)
    assert "acknowledged-lost" == own.kind  # the driver's own answer: lost, as before


def test_by_design_groups_of_any_tool_and_their_consequences_are_accepted() -> None:
    """`effect-duplicated:*:ledger` covers every tool's group; a symptom beside an accepted
    finding in one cell comes with it; beside none it stays open."""
    dup = Finding("effect-duplicated", "send_sms ran twice", path="ledger", tool="send_sms")
    differs = Finding("status-differs", "COMPLETED, not CANCELLED", path="runs[0].status")
    cancel = Finding("cancel-ignored", "a cancel was requested ...", path="model")
    accepted = {
        "effect-duplicated:*:ledger": Accepted("effect-duplicated:*:ledger", "no ownership"),
        "cancel-ignored:-:model": Accepted("cancel-ignored:-:model", "in-memory cancel"),
    }
    with_cancel = _cell("mid-model:1", cancel, differs, dup, verdict="diverged")
    alone = _cell("mid-model:2", differs, verdict="diverged")
    apply_accepted([with_cancel, alone], accepted)
    assert with_cancel.accepted and not alone.accepted
    reasons = [f["accepted"] for f in with_cancel.findings]
    assert "in-memory cancel" == reasons[0] and "no ownership" == reasons[2]
    assert reasons[1].startswith("comes with cancel-ignored:-:model")
