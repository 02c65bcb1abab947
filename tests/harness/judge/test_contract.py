"""The contract checks against runtimes that break one promise each, in their baseline too
(so no comparison with the baseline can see it): real workers, real kills, real SQLite."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest

from killpoint import kinds, scenarios
from killpoint.cli import output as cli_output
from killpoint.engine.campaign import Campaign, CampaignConfig
from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig
from killpoint.judge import contract
from killpoint.report.document import to_document
from killpoint.scenarios.conversation import canonical_arguments
from killpoint.scenarios.ledger import Entry
from killpoint.values.cell import Cell, CellResult
from tests.harness.broken_runtimes import CONTRACT_VARIANTS, RESERVE_VARIANTS


def run(tmp_path: Path, runtime: str, where: str) -> CellResult:
    return run_with_row(tmp_path, runtime, where)[0]


def run_with_row(tmp_path: Path, runtime: str, where: str) -> tuple[CellResult, set[str]]:
    """The cell, and the kinds its row's uninterrupted run showed (the row's findings)."""
    scenario, mode, schedule = where.split("/")
    engine = Engine(EngineConfig(work_root=tmp_path / runtime.replace(":", "_"), keep="none"))
    cell = Cell(runtime, scenario, mode, "sqlite", kinds.parse_schedule(schedule))
    result = engine.run_cell(cell)
    return result, {f["kind"] for f in engine.baseline(cell.row).findings}


def unexpected_kinds(result: CellResult) -> set[str]:
    return {f["kind"] for f in result.findings if not f["expected"] and f["verdict"] != "ok"}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variant", "kind", "where"), CONTRACT_VARIANTS, ids=[v[0] for v in CONTRACT_VARIANTS]
)
def test_only_its_check_names_each_broken_promise(
    tmp_path: Path, variant: str, kind: str, where: str
) -> None:
    """The broken variant is caught by exactly one kind of finding, the check made for its
    promise: in the cell, or, where the uninterrupted run shows it as the cell does, in
    the row alone (happens without a crash); the shipped reference runtime passes the
    same cell and its row shows nothing."""
    broken, row = run_with_row(tmp_path, f"tests.harness.broken_runtimes:{variant}", where)
    assert {kind} == unexpected_kinds(broken) | row, [f["sentence"] for f in broken.findings]
    assert not (unexpected_kinds(broken) & row), "a cell repeats what its row shows"
    sound, sound_row = run_with_row(tmp_path, "reference", where)
    assert set() == sound_row
    assert (True, set()) == (sound.expected, unexpected_kinds(sound)), sound.detail
    assert kind not in {f["kind"] for f in sound.findings}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variant", "kind", "where"), RESERVE_VARIANTS, ids=[v[0] for v in RESERVE_VARIANTS]
)
def test_a_second_shape_names_the_same_broken_promises(
    tmp_path: Path, variant: str, kind: str, where: str
) -> None:
    """cancel, idempotency keys and session state each had one scenario; `reserve` (two
    parallel batches of idempotent calls that update the state, cancelled mid-run) names
    the same three broken promises, and the reference runtime passes it."""
    test_only_its_check_names_each_broken_promise(tmp_path, variant, kind, where)


def confirm_session(execution: dict[str, object] | None) -> dict[str, object]:
    call = {"name": "send_email", "arguments": '{"draft_id": "d1"}'}
    run = {
        "status": "COMPLETED",
        "messages": [{"role": "user"}, {"role": "assistant", "tool_calls": [call]}],
        "tool_executions": [] if execution is None else [{"turn": 1, "call_index": 0, **execution}],
    }
    return {"state": None, "runs": {"r1": run}}


def started(tool: str, arguments: str) -> Entry:
    return Entry("confirm", tool, arguments, None, "started", True, 1, 0.0)


def test_a_confirmation_is_applied_when_its_effect_happened() -> None:
    """Applied means the tool's effect happened: a missing execution record alone is the
    store's bookkeeping, not a dropped confirmation; a rejection of a confirmed call, or
    no effect at all, is one; so is an effect of a refused call."""
    scenario = scenarios.get("confirm")
    ran = [started("send_email", canonical_arguments('{"draft_id": "d1"}'))]
    assert contract.confirmations(scenario, confirm_session(None), ran) == []
    assert contract.confirmations(scenario, confirm_session({"status": "ok"}), ran) == []
    rejected = contract.confirmations(scenario, confirm_session({"status": "rejected"}), [])
    assert [f.sentence for f in rejected] == [
        "run r1 completed rejecting the confirmed call send_email of turn 1"
    ]
    dropped = contract.confirmations(scenario, confirm_session({"status": "ok"}), [])
    assert [f.sentence for f in dropped] == [
        "run r1 completed without applying the confirmed call send_email of turn 1"
    ]
    refused = dataclasses.replace(scenario, confirm={"send_email": False})
    assert [f.sentence for f in contract.confirmations(refused, confirm_session(None), ran)] == [
        "run r1 ran send_email of turn 1 although the confirmation refused it"
    ]


def usage_session(*counts: object) -> dict[str, object]:
    runs = {
        f"r{n}": {"status": "COMPLETED", "messages": [], "tool_executions": [], "usage": usage}
        for n, usage in enumerate(counts)
    }
    return {"state": None, "runs": runs}


def test_model_calls_counted_beyond_what_the_model_served_are_found() -> None:
    """The runs' model calls, summed over the session, may not pass the replies the model
    served in the cell; fewer is what a crash leaves (a reply asked again)."""
    (found,) = contract.model_calls(usage_session({"model_calls": 4}, {"model_calls": 3}), served=5)
    assert (found.kind, found.expected_value, found.actual_value) == ("usage-overcounted", 5, 7)
    assert "7 model calls" in found.sentence and "served 5" in found.sentence
    assert contract.model_calls(usage_session({"model_calls": 3}), served=5) == []


def test_a_runtime_that_keeps_no_model_call_count_is_not_judged_on_it() -> None:
    """agno's metrics have no `model_calls`: nothing to check, nothing found."""
    session = usage_session({"input_tokens": 900}, None, {"model_calls": True})
    assert contract.model_calls(session, served=0) == []
    assert contract.model_calls(None, served=0) == []


def cancelled_session(status: str) -> dict[str, object]:
    return {"state": None, "runs": {"r1": {"status": status}}}


def test_a_cancel_honoured_after_more_turns_is_late_and_one_never_honoured_is_ignored() -> None:
    """The word says what was seen: turns past the cancel and a CANCELLED end is a late
    cancel; another end ignored it; without the end, only the weaker claim is made."""
    scenario = scenarios.get("cancel")
    at = scenario.cancel_at_turn
    assert at is not None
    turns = [*range(1, at + 1), at + 1, at + 2]
    late = contract.cancel_honoured(scenario, turns, cancelled_session("CANCELLED"))
    assert [(f.kind, f.actual_value) for f in late] == [("cancel-late", [at + 1, at + 2])]
    ignored = contract.cancel_honoured(scenario, turns, cancelled_session("COMPLETED"))
    assert [f.kind for f in ignored] == ["cancel-ignored"]
    assert "ended COMPLETED" in ignored[0].sentence
    unknown = contract.cancel_honoured(scenario, turns, None)
    assert [f.kind for f in unknown] == ["cancel-late"]
    assert contract.cancel_honoured(scenario, list(range(1, at + 1)), None) == []


def test_a_cell_is_charged_only_with_what_its_crash_changed() -> None:
    """A contract finding equal to the row's (kind, where, values) is the row's; one whose
    values or kind differ is the cell's."""
    scenario = scenarios.get("cancel")
    at = scenario.cancel_at_turn
    assert at is not None
    done = cancelled_session("CANCELLED")
    row = [
        contract.row_finding(f)
        for f in contract.cancel_honoured(scenario, [at, at + 1, at + 2], done)
    ]
    assert row[0]["group"] == "cancel-late:-:model@no-crash"
    same = contract.cancel_honoured(scenario, [at, at + 1, at + 1, at + 2], done)
    assert contract.added_by_crash(same, row) == []
    more = contract.cancel_honoured(scenario, [at, at + 1, at + 2, at + 3], done)
    assert contract.added_by_crash(more, row) == more
    forgotten = contract.cancel_honoured(scenario, [at, at + 1, at + 2], cancelled_session("X"))
    assert contract.added_by_crash(forgotten, row) == forgotten
    # A run cut short by its crash (lost, its end never reached) saw part of the row's
    # late cancel: nothing the crash added.
    cut = contract.cancel_honoured(scenario, [at, at + 1], None)
    assert [f.kind for f in cut] == ["cancel-late"]
    assert contract.added_by_crash(cut, row) == []


@pytest.mark.slow
def test_a_late_cancel_is_one_row_level_group_and_no_crash_cell_repeats_it(
    tmp_path: Path,
) -> None:
    """agno's late cancel, in the reference runtime: the uninterrupted run already asks
    for turns past the cancel before it ends CANCELLED. The campaign reports it once, as
    the row's group ("happens without a crash"), fails on it, and a crash cell whose
    resumed run equals the baseline carries no cancel finding at all."""
    config = CampaignConfig.from_options(
        runtime="tests.harness.broken_runtimes:late_cancel",
        scenarios="cancel",
        modes="tool-batch",
        points="boundaries",
        workers=2,
        keep="none",
        work_root=str(tmp_path / "work"),
    )
    result = Campaign(config).run()
    rows = result.row_groups()
    assert [(g.kind, g.key, g.cells) for g in rows] == [
        (
            "cancel-late",
            "cancel-late:-:model@no-crash",
            ["tests.harness.broken_runtimes:late_cancel/cancel/tool-batch/sqlite"],
        )
    ]
    assert result.failing and result.summary()["without_crash"] == 1
    # Where the crash changed it (a cancel noted in memory, forgotten by the resumed run,
    # which completes), the cell says what its crash added: the cancel ignored.
    assert "cancel-late" not in {g.kind for g in result.groups()}
    equal = [c for c in result.cells if not any(f["path"].startswith("runs") for f in c.findings)]
    assert equal, [c.detail for c in result.cells]
    for c in equal:
        assert (c.verdict, c.expected) == ("ok", True), c.findings
    # Its own section in the terminal summary and in the JSON.
    text = io.StringIO()
    document = to_document(result, command=["killpoint", "matrix"])
    cli_output.summary(document, cli_output.console(text))
    printed = text.getvalue()
    assert "happens without a crash: 1 group" in printed
    assert "1. cancel-late at model: 1 row, diverged" in printed
    assert [g["key"] for g in document["without_crash"]] == ["cancel-late:-:model@no-crash"]
    assert [f["kind"] for b in document["baselines"] for f in b["findings"]] == ["cancel-late"]


def test_an_overcount_the_baseline_shows_is_the_rows_and_a_cell_only_adds_beyond_it() -> None:
    """The uninterrupted run is held to the model's served replies too (its overcount is
    the row's finding); a cell is charged only with an excess larger than the row's,
    since a crash changes both counts (a reply asked again is served again)."""
    scenario = scenarios.get("research")
    twice = usage_session({"model_calls": 8})
    (base,) = contract.without_crash(scenario, twice, [], [], served=4)
    assert (base.kind, base.expected_value, base.actual_value) == ("usage-overcounted", 4, 8)
    assert contract.without_crash(scenario, twice, [], []) == []  # not asked: not checked
    row = [contract.row_finding(base)]
    resumed = contract.model_calls(usage_session({"model_calls": 9}), served=5)
    assert contract.added_by_crash(resumed, row) == []  # 4 over, as the row
    worse = contract.model_calls(usage_session({"model_calls": 11}), served=5)
    assert worse == contract.added_by_crash(worse, row)  # 6 over: the crash added 2
