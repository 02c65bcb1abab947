"""A scenario's `Expected` (status, final answer, tool calls) held against what its runs
ended with: each way to miss it is named, and a runtime whose every run misses it (a
cancel honoured a batch early: 2 of the 3 calls) fails its row although every crash cell
equals its baseline."""

# ruff: noqa: SIM300
from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from killpoint import scenarios
from killpoint.engine.campaign import Campaign, CampaignConfig
from killpoint.judge.expectations import final_answer, made_calls, unmet
from killpoint.scenarios.builtin.research import SUMMARY


def execution(name: str, turn: int, index: int = 0) -> dict[str, Any]:
    return {"name": name, "arguments": "{}", "turn": turn, "call_index": index}


def run(status: str, calls: list[dict[str, Any]], answer: str | None = None) -> dict[str, Any]:
    messages: list[dict[str, Any]] = [{"role": "user", "tool_calls": []}]
    if answer is not None:
        messages.append({"role": "assistant", "tool_calls": [], "content": answer})
    return {"status": status, "messages": messages, "tool_executions": calls}


def session(*runs: dict[str, Any]) -> dict[str, Any]:
    return {"state": None, "runs": {f"r{n}": r for n, r in enumerate(runs)}}


RESEARCH_CALLS = [execution("search", 1), *(execution("fetch_detail", t) for t in (2, 3, 4))]


def test_a_run_that_ends_as_expected_meets_its_expectation() -> None:
    research = scenarios.get("research")
    assert [] == unmet(research, session(run("COMPLETED", RESEARCH_CALLS, SUMMARY)))


def test_a_cancel_that_made_two_of_the_three_calls_is_named() -> None:
    cancel = scenarios.get("cancel")
    short = [execution("process_batch", t) for t in (1, 2)]
    (found,) = unmet(cancel, session(run("CANCELLED", short)))
    assert ("outcome-unexpected", "runs[0].calls") == (found.kind, found.path)
    assert (
        "the store holds 2 tool executions of run 1 (process_batch, process_batch); the "
        "scenario expects 3 calls (process_batch, process_batch, process_batch)"
    ) == found.sentence


def test_calls_are_taken_in_call_order_and_the_answer_from_the_last_reply() -> None:
    stored = run("COMPLETED", [execution("b", 2), execution("c", 1, 1), execution("a", 1)], "x")
    assert ["a", "c", "b"] == made_calls(stored)
    assert "x" == final_answer(stored)
    assert "y" == final_answer({**stored, "content": "y"})  # the runtime's own field first


def test_another_answer_status_or_run_count_is_named() -> None:
    research = scenarios.get("research")
    (answer,) = unmet(research, session(run("COMPLETED", RESEARCH_CALLS, "I made it up.")))
    assert "runs[0].content" == answer.path
    assert answer.sentence.startswith("run 1 answered 'I made it up.'; the scenario expects")
    (status,) = unmet(research, session(run("ERROR", RESEARCH_CALLS)))
    assert "run 1 ended ERROR; the scenario expects COMPLETED" == status.sentence
    multi = scenarios.get("multi-run")
    first = run("COMPLETED", [execution("lookup_population", 1)], multi.expected[0].content)
    (missing,) = unmet(multi, session(first))
    assert "the session holds 1 run; scenario 'multi-run' runs 3" == missing.sentence
    # A session stops at its first run that does not complete: the later ones are not owed.
    stopped = {**first, "status": "ERROR"}
    assert ["runs[0].status"] == [f.path for f in unmet(multi, session(stopped))]


@pytest.mark.slow
def test_a_runtime_that_cancels_a_batch_early_fails_its_row(tmp_path: Path) -> None:
    """Every run of it, crashed or not, makes 2 of the 3 calls: the cells equal the
    baseline, so only the expectation sees it, once, as the row's finding."""
    config = CampaignConfig.from_options(
        runtime="tests.harness.broken_runtimes:early_cancel",
        scenarios="cancel",
        modes="tool-batch",
        points="after-checkpoint:1",
        workers=2,
        keep="none",
        work_root=str(tmp_path / "work"),
    )
    result = Campaign(config).run()
    assert [("outcome-unexpected", "outcome-unexpected:-:runs[*].calls@no-crash")] == [
        (g.kind, g.key) for g in result.row_groups()
    ]
    assert result.failing
    assert [] == result.unexpected  # the crash added nothing
    (row,) = result.row_groups()
    assert row.example.startswith(
        "the store holds 2 tool executions of run 1 (process_batch, process_batch)"
    )
    sound = Campaign(
        CampaignConfig.from_options(
            runtime="reference", scenarios="cancel", modes="tool-batch",
            points="after-checkpoint:1", workers=2, keep="none",
            work_root=str(tmp_path / "sound"),
        )
    ).run()  # fmt: skip
    assert ([], False) == (sound.row_groups(), sound.failing)
