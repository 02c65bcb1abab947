"""The contract checks against runtimes that break one promise each, in their baseline too
(so no comparison with the baseline can see it): real workers, real kills, real SQLite."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from killpoint import kinds, scenarios
from killpoint.engine.cell_host import EngineConfig
from killpoint.engine.engine import Engine
from killpoint.judge import contract
from killpoint.scenarios.conversation import canonical_arguments
from killpoint.scenarios.ledger import Entry
from killpoint.values.cell import Cell, CellResult
from tests.harness.broken_runtimes import CONTRACT_VARIANTS


def run(tmp_path: Path, runtime: str, where: str) -> CellResult:
    scenario, mode, schedule = where.split("/")
    engine = Engine(EngineConfig(work_root=tmp_path / runtime.replace(":", "_"), keep="none"))
    return engine.run_cell(Cell(runtime, scenario, mode, "sqlite", kinds.parse_schedule(schedule)))


def unexpected_kinds(result: CellResult) -> set[str]:
    return {f["kind"] for f in result.findings if not f["expected"] and f["verdict"] != "ok"}


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variant", "kind", "where"), CONTRACT_VARIANTS, ids=[v[0] for v in CONTRACT_VARIANTS]
)
def test_only_its_check_names_each_broken_promise(
    tmp_path: Path, variant: str, kind: str, where: str
) -> None:
    """The broken variant's cell is unexpected with exactly one kind of finding, the check
    made for its promise; the shipped reference runtime passes the same cell."""
    broken = run(tmp_path, f"tests.harness.broken_runtimes:{variant}", where)
    assert not broken.expected
    assert {kind} == unexpected_kinds(broken), [f["sentence"] for f in broken.findings]
    sound = run(tmp_path, "reference", where)
    assert (True, set()) == (sound.expected, unexpected_kinds(sound)), sound.detail
    assert kind not in {f["kind"] for f in sound.findings}


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
    assert "7 model call(s)" in found.sentence and "served 5" in found.sentence
    assert contract.model_calls(usage_session({"model_calls": 3}), served=5) == []


def test_a_runtime_that_keeps_no_model_call_count_is_not_judged_on_it() -> None:
    """agno's metrics have no `model_calls`: nothing to check, nothing found."""
    session = usage_session({"input_tokens": 900}, None, {"model_calls": True})
    assert contract.model_calls(session, served=0) == []
    assert contract.model_calls(None, served=0) == []
