# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Pause, takeover and double resume judged from what happened (the ledger, the model's
log, the store), never from a returned status: a runtime whose second or stale caller
waits for the owner and returns its result is sound, and is told so (real workers, real
SQLite)."""

from __future__ import annotations

import copy
import json
from collections import Counter
from pathlib import Path

import pytest

from killpoint import kinds
from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig
from killpoint.kinds.takeover import unfinished_at, unfinished_batch
from killpoint.scenarios import gates
from killpoint.scenarios.conversation import canonical_arguments
from killpoint.values.cell import Cell, CellResult

pytestmark = pytest.mark.slow

PATIENT = "tests.harness.patient_runtime:patient"


def run(tmp_path: Path, runtime: str, where: str, timeout: float | None = None) -> CellResult:
    scenario, mode, schedule = where.split("/")
    options = {} if timeout is None else {"timeout": timeout}
    engine = Engine(EngineConfig(work_root=tmp_path / "work", keep="none", **options))
    return engine.run_cell(Cell(runtime, scenario, mode, "sqlite", kinds.parse_schedule(schedule)))


def kinds_of(result: CellResult) -> set[str]:
    return {f["kind"] for f in result.findings}


@pytest.mark.parametrize(
    "where",
    [
        "research/tool-batch/double-resume:1",
        "side-effects/tool-batch/double-resume:2",
        "research/tool-batch/sigstop:1",
        "research/tool-batch/sigstop:2",
    ],
)
def test_a_caller_that_waits_for_the_owner_is_no_second_driver_and_writes_nothing(
    tmp_path: Path, where: str
) -> None:
    """The patient runtime's second resumer waits for the owner and returns its result,
    and its woken stale worker is fenced, then returns the owner's result: both callers
    return a status, yet one process ran every tool and model turn, and the store after
    the stale worker woke is the takeover's. No two-drivers, no stale-write: ok."""
    result = run(tmp_path, PATIENT, where)
    assert set() == kinds_of(result) & {"two-drivers", "stale-write"}, result.detail
    assert ("ok", True) == (result.verdict, result.expected), result.findings
    assert all(code == 0 for code in result.exit_codes[1:]), result.exit_codes


def test_two_resumers_that_both_drive_are_named_from_the_ledger_and_the_model_log(
    tmp_path: Path,
) -> None:
    """agno has no run ownership: both resumers run tools and ask the model, and the
    finding says what each did."""
    pytest.importorskip("agno")
    result = run(tmp_path, "agno", "side-effects/tool-batch/double-resume:1")
    (found,) = [f for f in result.findings if f["kind"] == "two-drivers"]
    assert "resumer-a" in found["sentence"] and "resumer-b" in found["sentence"]
    assert "asked for model turn" in found["sentence"]


def test_a_fenced_worker_that_waits_for_the_owner_does_not_deadlock_sigstop_writing(
    tmp_path: Path,
) -> None:
    """The woken worker's write is rejected and it waits for the owner, which is held at
    its next checkpoint: the harness lets the takeover go on after a bounded wait, the
    stale worker then returns the owner's result, and nothing is found (it used to be
    `hung` at twice the time limit)."""
    result = run(tmp_path, PATIENT, "research/tool-batch/sigstop-writing:2", timeout=60)
    assert ("ok", True) == (result.verdict, result.expected), result.findings
    assert result.seconds < 60
    texts = [e[1] for e in result.timeline]
    assert any("store confirms the takeover owns the run" in t for t in texts), texts
    assert any("the takeover goes on" in t for t in texts), texts


@pytest.mark.parametrize(
    ("where", "side"),
    [
        ("research/sync/sigstop:6", "store after the stale worker woke"),
        ("side-effects/sync/double-resume:5", "store after both resumers"),
    ],
)
def test_the_cells_end_is_named_for_what_it_is_and_the_timeline_ends_with_the_verdict(
    tmp_path: Path, where: str, side: str
) -> None:
    """LangGraph has no run ownership: the store at the cell's end is the stale worker's
    (or both resumers'), never "the resumed run", in every sentence that compares it with
    the baseline; and the timeline's last event is the verdict, no event before it saying
    the sessions match."""
    pytest.importorskip("langgraph")
    result = run(tmp_path, "langgraph", where)
    assert result.verdict in ("corrupt", "duplicated") and not result.expected
    assert side == result.sides["actual"]
    compared = [f for f in result.findings if (f.get("sides") or [None])[0] == "baseline"]
    assert compared, result.findings
    for f in compared:
        assert side in f["sentence"] and "resumed run" not in f["sentence"], f["sentence"]
    texts = [e[1] for e in result.timeline]
    assert texts[-1].startswith(f"verdict: {result.verdict}, unexpected: "), texts[-1]
    assert not any("matches" in t for t in texts), texts


OPTIMISTIC = "tests.harness.optimistic_runtime:adapter"


@pytest.mark.parametrize(
    "where", ["research/every-batch/sigstop-writing:6", "research/every-batch/sigstop:5"]
)
def test_a_run_final_before_its_last_write_leaves_nothing_to_take_over(
    tmp_path: Path, where: str
) -> None:
    """optimisticagent's run is durably COMPLETED at checkpoint 5 and writes a sixth (as
    ADK writes end_of_agent after the final answer): paused before or at that last write,
    there is no run to take over, so the cell says so, wakes the worker to finish its own
    write, and is judged on the store it leaves (it was `missed`, a harness defect)."""
    result = run(tmp_path, OPTIMISTIC, where)
    assert ("ok", True) == (result.verdict, result.expected), result.findings
    texts = [e[1] for e in result.timeline]
    assert any("nothing is left to take over" in t for t in texts), texts
    assert not any("resumer" in t and "started" in t for t in texts), texts


def test_a_store_that_refuses_the_later_writer_is_two_drivers_and_a_failed_takeover(
    tmp_path: Path,
) -> None:
    """optimisticagent has no run ownership but refuses a writer whose copy is older than
    the store's: the woken worker's write lands while the takeover is held before its
    first, goes on to finish the run, and the takeover's write is refused. One history is
    kept, nothing torn: `takeover-refused` (unresumable, medium), no `stale-write`, and
    the store at the end is the baseline's."""
    result = run(tmp_path, OPTIMISTIC, "research/every-batch/sigstop-writing:3")
    assert ("unresumable", False) == (result.verdict, result.expected), result.findings
    found = {f["kind"]: f for f in result.findings}
    assert "stale-write" not in found and "corrupt" != result.verdict
    refused = found["takeover-refused"]
    assert "medium" == refused["severity"]
    assert "StaleRun" in refused["sentence"] and "two drivers" in refused["sentence"]
    assert not {"messages-differ", "status-differs", "runs-differ"} & set(found), found


def test_a_pause_before_a_batch_is_durable_still_knows_the_batch_in_flight(
    tmp_path: Path,
) -> None:
    """parallel-fetch in "tool" mode: checkpoint 5 is the second batch's first result, and
    the batch's message lands with it. Paused about to write it, the store holds only the
    first batch, yet all three calls of the second were dispatched: each may still run in
    the woken worker's threads, so each is unfinished (from the baseline), not none."""
    engine = Engine(EngineConfig(work_root=tmp_path / "work", keep="none"))
    base = engine.baseline(("reference", "parallel-fetch", "tool", "sqlite"))
    writing = gates.checkpoint_gate(5, "writing")
    second = base.batch_at(base.position(writing))
    assert second is not None and 2 == second.number
    pages = [json.loads(c.arguments)["page"] for c in second.calls]
    assert ["delta", "epsilon", "zeta"] == sorted(pages)
    final = gates.checkpoint_gate(base.checkpoints, "writing")  # after the model's answer
    assert base.batch_at(base.position(final)) is None

    first_only = copy.deepcopy(base.session)
    assert first_only is not None
    for stored in first_only["runs"].values():
        cut = [n for n, m in enumerate(stored["messages"]) if m["tool_calls"]][1]
        stored["messages"] = stored["messages"][:cut]
        stored["tool_executions"] = [e for e in stored["tool_executions"] if e["turn"] == 1]
    assert Counter() == unfinished_batch(first_only)  # the store alone knows of no batch
    expected = Counter(("fetch_page", canonical_arguments({"page": p})) for p in pages)
    assert expected == unfinished_at(base, writing, first_only)
    # Once the store holds the batch, its results there count: none is unfinished.
    assert Counter() == unfinished_at(base, writing, base.session)
