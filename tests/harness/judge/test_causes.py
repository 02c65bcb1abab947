# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Causes: cells clustered by the findings that occur together, named by the most telling
one, said in one sentence from the evidence, ordered by impact; the symptom groups are a
cause's details. The cells are shaped as issue 56's agno campaign had them (research,
side-effects and cancel in tool-batch): 22 groups, one cause each reader can name."""

from __future__ import annotations

from typing import Any

from killpoint.engine.campaign import CampaignResult
from killpoint.judge.causes import find_causes
from killpoint.judge.groups import Accepted, apply_accepted, group_findings
from killpoint.values.cell import CellResult
from killpoint.values.findings import NO_CRASH, Finding, verdict_of
from tests.harness.stored_early import (
    EARLY,
    LOSING,
    document_of,
    stored_early,  # noqa: F401  (a fixture)
)


def finding(kind: str, path: str, **fields: Any) -> Finding:
    return Finding(kind, fields.pop("sentence", f"{kind} at {path}"), path=path, **fields)


def agno_cell(scenario: str, point: str, *found: Finding, held: int = 0) -> CellResult:
    verdict, expected = verdict_of(list(found))
    cell_id = f"agno/{scenario}/tool-batch/sqlite/{point}"
    return CellResult(
        id=cell_id, runtime="agno", scenario=scenario, mode="tool-batch", store="sqlite",
        schedule=[point], verdict=verdict, expected=expected,
        findings=[f.to_json() for f in found], replay=f"killpoint replay {cell_id}",
        store_at_crash={"checkpoints": held, "runs": [{"run": 1, "tool_executions": held}]},
    )  # fmt: skip


def lost_executions(held: int) -> Finding:
    """What a continued agno run keeps: its own leg's executions; the `held` the store had
    at the crash are missing at the end."""
    return Finding.of(
        "tool-executions-lost",
        {"n": held, "of": 6, "calls": ["process_batch({})"], "expected_side": "baseline",
         "actual_side": "resumed run"},
        path="runs[0].tool_executions",
    )  # fmt: skip


def forgotten_cancel() -> list[Finding]:
    """A cancel requested before the crash and forgotten: the contract's finding and the
    four differences it makes, in every such cell."""
    return [
        Finding.of("cancel-ignored", {"at": 3, "beyond": [4, 5, 6, 7], "ended": ["COMPLETED"]},
                   path="model"),
        finding("status-differs", "runs[0].status"),
        finding("run-differs", "runs[0].cancellation_stage"),
        finding("run-differs", "runs[0].content"),
        finding("messages-differ", "runs[0].messages[13]"),
    ]  # fmt: skip


def campaign() -> list[CellResult]:
    cells = []
    points = ["after-checkpoint", "mid-batch", "mid-model", "mid-commit", "double-resume"]
    for n in range(1, 31):  # research and side-effects: lost executions, some with usage
        scenario = "research" if n % 2 else "side-effects"
        extra = (
            [finding("usage-differs", "state.session_metrics.input_tokens")] if n % 3 == 0 else []
        )
        point = f"{points[n % len(points)]}:{n}"
        cells.append(agno_cell(scenario, point, lost_executions(n % 4 + 1), *extra, held=n % 4 + 1))
    for n in range(1, 13):  # cancel: forgotten, and its executions lost too in most
        extra = [lost_executions(2)] if n % 4 else []
        cells.append(agno_cell("cancel", f"mid-model:{n}", *forgotten_cancel(), *extra, held=2))
    for n in range(1, 7):  # stale writes, with repeated effects
        cells.append(agno_cell("cancel", f"sigstop:{n}", finding("stale-write", "store"),
                               finding("effect-duplicated", "ledger", tool="process_batch")))  # fmt: skip
    for n in range(1, 4):  # token counts alone
        cells.append(agno_cell("research", f"model-500:{n}",
                               finding("usage-differs", "state.session_metrics.input_tokens")))  # fmt: skip
    return cells


class TestCauses:
    def test_one_cause_per_defect_not_one_per_symptom(self) -> None:
        """Issue 56: the same cancel cells appeared under five groups; they are one cause,
        named by the cancel, with the differences it makes as its groups."""
        cells = campaign()
        groups = group_findings(cells)
        causes = find_causes(cells)
        assert len(groups) > len(causes)
        assert ["tool-executions-lost", "cancel-ignored", "stale-write", "usage-differs"] == [
            c.head.kind for c in causes
        ]
        (cancel,) = [c for c in causes if c.head.kind == "cancel-ignored"]
        assert 12 == len(cancel.cells)
        assert {
            "cancel-ignored:-:model",
            "status-differs:-:runs[*].status",
            "run-differs:-:runs[*].cancellation_stage",
            "run-differs:-:runs[*].content",
            "messages-differ:-:runs[*].messages[*]",
        } <= {d.group.key for d in cancel.details}
        cancel_cells = {c.id for c in cells if c.scenario == "cancel" and "mid-model" in c.id}
        for c in causes:  # no other cause holds the cancel cells for their differences
            if c is not cancel and c.head.kind != "tool-executions-lost":
                assert not cancel_cells & set(c.cells), c.name

    def test_the_largest_cause_comes_first(self) -> None:
        """Ordered by impact (cells failed, severity, rows touched): the lost executions of
        39 cells before the cancel of 12, the low token counts last."""
        causes = find_causes(campaign())
        assert [39, 12, 6, 0] == [c.failing_cells for c in causes]
        assert "low" == causes[-1].severity and 3 == causes[-1].low_cells

    def test_a_cause_is_said_in_one_sentence_from_its_evidence(self) -> None:
        """docs/agno.md's cause, 'a continued run keeps only the tool executions of its
        last leg', read from the evidence: the executions missing at the end are exactly
        those the store held at the crash."""
        lost = find_causes(campaign())[0]
        assert lost.sentence.startswith(
            "A resumed run keeps only the tool executions it ran itself: in 39 of 39 cells "
            "the executions missing at the end are exactly those the store held at the crash"
        ), lost.sentence
        cancel = find_causes(campaign())[1]
        assert "A cancel requested before the crash does not survive it" in cancel.sentence
        assert "ended COMPLETED" in cancel.sentence

    def test_symptoms_in_cells_of_no_mechanism_are_a_cause_of_their_own(self) -> None:
        """The repeated effects come with the stale writes: a detail of that cause; token
        counts with nothing else are a (low) cause of their own."""
        causes = {c.head.kind: c for c in find_causes(campaign())}
        stale = causes["stale-write"]
        assert "effect-duplicated:process_batch:ledger" in {d.group.key for d in stale.details}
        assert "effect-duplicated" not in causes
        assert "usage-differs" in causes

    def test_a_cause_accepted_by_design_is_marked_and_fails_nothing(self) -> None:
        """The forgotten cancel accepted (agno's by-design file): its differences come with
        it in each cell, the cause is accepted with the reason, and fails no cell of its
        own; the cells still fail by their lost executions."""
        cells = campaign()
        reason = "by design in agno: cancellation lives in process memory"
        apply_accepted(
            cells, {"cancel-ignored:-:model": Accepted("cancel-ignored:-:model", reason)}
        )
        cancel = next(c for c in find_causes(cells) if c.head.kind == "cancel-ignored")
        assert (reason, 0) == (cancel.accepted, cancel.failing_cells)
        alone = [c for c in cells if c.id in cancel.cells and len(c.findings) == 5]
        assert alone and all(c.accepted for c in alone)
        assert all(c.failing for c in cells if c.id in cancel.cells and c not in alone)


class TestHistoryRules:
    def test_a_history_rule_names_the_cause_its_differences_come_with(self) -> None:
        """A status returned before its commit landed, in the same cells as the status and
        run differences and the missed outcome it leaves: one cause, named by the rule (it
        says what went wrong; the outcome only that the end differs), the rest its details. A run's usage undercounted alone is a low cause of its
        own."""
        early = Finding.of(
            "acknowledged-early",
            {"run_id": "r1", "status": "COMPLETED", "ack": 9, "committed": 10},
            path="runs['r1']",
        )
        cells = [
            agno_cell("research", f"after-checkpoint:{n}", early,
                      finding("status-differs", "runs[0].status"),
                      finding("run-differs", "runs[0].content"),
                      finding("outcome-unexpected", "runs[0]"))
            for n in range(1, 5)
        ] + [
            agno_cell("multi-run", f"mid-model:{n}",
                      Finding.of("usage-undercounted",
                                 {"run_id": "r1", "stored": 2, "consumed": 4, "drives": 2},
                                 path="runs['r1'].usage.model_calls"))
            for n in range(1, 3)
        ]  # fmt: skip
        causes = find_causes(cells)
        assert ["acknowledged-early", "usage-undercounted"] == [c.head.kind for c in causes]
        assert {"status-differs:-:runs[*].status", "run-differs:-:runs[*].content"} <= {
            d.group.key for d in causes[0].details
        }
        assert "low" == causes[1].severity


def test_a_failed_baseline_is_said_without_a_crash_and_from_its_evidence() -> None:
    """A row whose uninterrupted run returned COMPLETED for a run its store holds RUNNING:
    the one cell that carries it was planned at a stand-in point and made no crash. The
    cause says so, and says what the store holds, not that the run is missing."""
    facts = {"run_id": "r1", "status": "COMPLETED", "stored": "RUNNING", NO_CRASH: True}
    found = Finding("acknowledged-lost", "the baseline acknowledged ...", facts=facts)
    cells = [agno_cell(scenario, "mid-model:1", found) for scenario in ("research", "cancel")]
    (cause,) = find_causes(cells)
    assert "the store holds another status" in cause.sentence, cause.sentence
    assert "without a crash" in cause.sentence and "mid-model" not in cause.sentence
    # The same finding from a crash is placed at its points, as before.
    crashed = {k: v for k, v in facts.items() if k != NO_CRASH}
    found = Finding("acknowledged-lost", "run r1 returned COMPLETED", facts=crashed)
    (cause,) = find_causes([agno_cell("research", "mid-model:2", found)])
    assert "all at mid-model points" in cause.sentence, cause.sentence


def test_a_terminal_status_stored_mid_run_leads_the_cause_of_what_it_loses() -> None:
    """running_as_completed's campaign, as its cells had it: a run COMPLETED in the store
    at the crash is not resumed, so the executions and effects it had still to make are
    lost and its content differs, in nearly the same cells. One cause, named by the
    status stored before the run's end (what went wrong), not by what it lost."""
    cells = []
    # (point, checkpoints held, whether an effect of the baseline never happened)
    shapes = [("after-checkpoint:1", 1, True), ("after-checkpoint:2", 2, True),
              ("after-checkpoint:3", 3, True), ("after-checkpoint:4", 4, False),
              ("mid-batch:2:0", 1, True), ("mid-batch:3:0", 2, True), ("mid-batch:4:0", 3, False)]  # fmt: skip
    for point, held, effect in shapes:
        early = Finding.of(
            "terminal-early",
            {"run": 1, "run_id": "r1", "status": "COMPLETED", "point": point, "held": held,
             "turns": list(range(held + 1, 6)), "ended_at": 5},
            path="runs[0].status", actual_value="COMPLETED", expected_value=[5],
        )  # fmt: skip
        lost = [lost_executions(4 - held)] if held < 4 else []
        effects = [finding("effect-lost", "ledger", tool="fetch_detail")] if effect else []
        cells.append(agno_cell("research", point, early, *lost, *effects,
                               finding("messages-differ", "runs[0].messages[3]"),
                               finding("run-differs", "runs[0].content"), held=held))  # fmt: skip
    (cause,) = find_causes(cells)
    assert "terminal-early" == cause.head.kind
    assert 7 == len(cause.cells) == cause.failing_cells
    assert {
        "tool-executions-lost:-:runs[*].tool_executions",
        "effect-lost:fetch_detail:ledger",
        "messages-differ:-:runs[*].messages[*]",
    } <= {d.group.key for d in cause.details}
    assert cause.sentence == (
        "A run is stored as over before its end: in 7 cells the store already held it "
        "COMPLETED at the crash, where the uninterrupted run still went on to ask the model, "
        "so nothing resumed it, at after-checkpoint and mid-batch points"
    ), cause.sentence


def stored_over(point: str, held: int) -> Finding:
    """running_as_completed's finding: run 1 COMPLETED in the store at `point`, `held`
    checkpoints landed, where the uninterrupted run went on to checkpoint 5."""
    return Finding.of(
        "terminal-early",
        {"run": 1, "run_id": "r1", "status": "COMPLETED", "point": point, "held": held,
         "turns": list(range(held + 1, 6)), "ended_at": 5},
        path="runs[0].status", actual_value="COMPLETED", expected_value=[5],
    )  # fmt: skip


def stored_over_campaign() -> list[CellResult]:
    """running_as_completed's whole campaign (research, multi-run and cancel, every mode and
    point), scaled down as its cells had it: the run stored COMPLETED early in nearly every
    cell, at points where nothing else shows too (a paused worker's), so the executions and
    effects it lost, in a few of them, never cluster with it by the cells they share. Beside
    it: a store invariant and an ended status seen in a cell without it, and points missed
    where it made them unreachable."""
    cells = []
    for n in range(1, 4):  # what the run had still to do, lost
        point = f"after-checkpoint:{n}"
        cells.append(agno_cell("research", point, stored_over(point, n), lost_executions(4 - n),
                               finding("effect-lost", "ledger", tool="fetch_detail"),
                               finding("messages-differ", "runs[0].messages[3]"),
                               finding("run-differs", "runs[0].content"), held=n))  # fmt: skip
    for n in range(1, 9):  # the status stored early, and nothing else
        cells.append(agno_cell("research", f"sigstop:{n}", stored_over(f"sigstop:{n}", 1)))
    for n in range(1, 3):  # a batch without results: mostly where the run was stored early
        point = f"mid-commit:{n}"
        cells.append(agno_cell("research", point, stored_over(point, n),
                               finding("store-invariant", "store")))  # fmt: skip
    cells.append(agno_cell("cancel", "mid-commit:3", finding("store-invariant", "store")))
    for n in range(1, 3):  # points the run stored early made unreachable
        point = f"lease-outlived:{n}"
        cells.append(agno_cell("research", point, stored_over(point, 1),
                               finding("missed", "-")))  # fmt: skip
    for n in range(1, 4):  # an ended status, once where no run was stored early
        point = f"lock-held:{n}"
        found = [stored_over(point, 1)] if n < 3 else []
        cells.append(
            agno_cell("cancel", point, *found, finding("status-differs", "runs[0].status"))
        )
    return cells


def test_what_a_run_stored_over_early_never_made_is_a_detail_of_its_cause() -> None:
    """The user's running_as_completed campaign read "264 unexpected from 11 causes": its
    executions and effects lost, in cells that all carried the status stored early, were
    causes of their own because they were in too few of its cells to cluster with it.
    Every cell of them shows the more telling cause, so they are its details; a store
    invariant and an ended status seen once without it stay causes, and so does a point
    missed (what could not be judged is no consequence)."""
    cells = stored_over_campaign()
    causes = find_causes(cells)
    assert ["terminal-early", "store-invariant", "status-differs", "missed"] == [
        c.head.kind for c in causes
    ]
    early = causes[0]
    assert {
        "tool-executions-lost:-:runs[*].tool_executions": 3,
        "effect-lost:fetch_detail:ledger": 3,
        "messages-differ:-:runs[*].messages[*]": 3,
    }.items() <= {d.group.key: d.cells for d in early.details}.items()
    assert 17 == len(early.cells) == early.failing_cells
    assert early.sentence.startswith("A run is stored as over before its end: in 17 cells")
    # A cause of its own keeps every cell it shows in, those of the cause it came with too.
    assert 3 == len(causes[1].cells) and 3 == len(causes[2].cells)

    # Accepted by design, the status stored early holds no loss that is not: the lost
    # executions still fail their cells, under a cause of their own.
    cells = stored_over_campaign()
    reason = "by design: a test of the rule"
    apply_accepted(cells, {"terminal-early:-:runs[*].status": Accepted("", reason)})
    causes = {c.head.kind: c for c in find_causes(cells)}
    assert reason == causes["terminal-early"].accepted
    assert 3 == causes["effect-lost"].failing_cells


def test_a_real_campaign_reads_as_the_one_cause(
    stored_early: CampaignResult,  # noqa: F811
) -> None:
    """running_as_completed for real (research and multi-run, after each checkpoint): 7
    cells hold the run COMPLETED before its end, research's 3 lose what it had still to do.
    One cause, led by the status stored early, with the losses as its details, in the
    document every report is rendered from."""
    document = document_of(stored_early)
    assert ["terminal-early:-:runs[*].status"] == [c["key"] for c in document["causes"]]
    (cause,) = document["causes"]
    assert (EARLY, EARLY) == (cause["count"], cause["failing_cells"])
    details = {g["key"]: g["cells"] for g in cause["groups"]}
    assert {
        "tool-executions-lost:-:runs[*].tool_executions": LOSING,
        "effect-lost:fetch_detail:ledger": LOSING,
    }.items() <= details.items(), details
    # The same from the saved JSON, as `killpoint report` reads it back.
    cells = [CellResult.from_json(dict(c)) for c in document["cells"]]
    assert ["terminal-early"] == [c.head.kind for c in find_causes(cells)]


def test_a_meaning_with_clauses_says_its_cells_first() -> None:
    """A kind whose meaning runs on past its first clause read "...: the adapter's defect,
    not the runtime's in 2 cells": the count belongs to the cause, not to the last clause."""
    cells = [
        agno_cell("research", f"after-checkpoint:{n}", finding("adapter-error", "store"))
        for n in (1, 2)
    ]
    (cause,) = find_causes(cells)
    assert cause.sentence.startswith("In 2 cells, "), cause.sentence
    assert cause.sentence.endswith("the adapter's defect, not the runtime's"), cause.sentence
