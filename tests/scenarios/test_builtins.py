# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Every built-in scenario on the reference runtime: ends as it says, deterministically."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from killpoint import scenarios
from killpoint.adapters.reference import ReferenceAdapter
from killpoint.runtime import RunNotContinuable
from killpoint.scenarios.builtin import (
    cancel,
    confirm,
    flaky_model,
    hostile_content,
    large_output,
    long_chain,
    multi_run,
    parallel_fetch,
    research,
    reserve,
    session_state,
    side_effects,
    tool_error,
)

from .support import SESSION, Outcome, calls_of, ledger_multiset, run_scenario
from .test_catalog import NAMES

# Every built-in in every mode of the reference runtime (a scenario that needs mid-run
# checkpoints skips the mode that writes only at the end).
CELLS = [
    (name, mode)
    for name, sc in scenarios.BUILTINS.items()
    for mode in ("runs", "tool-batch", "tool")
    if not (sc.mid_run_only and mode == "runs")
]
_BASELINES: dict[tuple[str, str], Outcome] = {}


def baseline(name: str, mode: str, tmp_path_factory: pytest.TempPathFactory) -> Outcome:
    """One drive of a built-in, shared by the tests of this module."""
    if (name, mode) not in _BASELINES:
        workdir = tmp_path_factory.mktemp(f"{name}-{mode}")
        _BASELINES[(name, mode)] = run_scenario(scenarios.get(name), workdir, mode)
    return _BASELINES[(name, mode)]


def test_the_catalog_has_at_least_the_eleven_named_scenarios() -> None:
    """The issue's eleven built-ins (side-effects in two variants) are registered, in order."""
    expected = NAMES
    assert expected == list(scenarios.BUILTINS)


@pytest.mark.parametrize(("name", "mode"), CELLS, ids=[f"{n}-{m}" for n, m in CELLS])
def test_builtin_ends_as_expected_and_twice_the_same(
    name: str, mode: str, tmp_path: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Each built-in, in each mode it declares, ends with the status, final content and
    tool calls its Expected says; a second drive on fresh store and model state leaves
    identical runs and ledger and byte-identical model traffic."""
    sc = scenarios.get(name)
    first = baseline(name, mode, tmp_path_factory)
    expected = [(e.status, e.content, e.calls) for e in sc.expected]
    actual = []  # one entry per run that happened: a run missing makes the lists differ
    for r, run, e in zip(first.results, first.runs, sc.expected, strict=False):
        content = r.content if e.content is not None else None
        actual.append((r.status, content, calls_of(run) if e.calls is not None else None))
    assert len(sc.inputs) == len(first.results)
    assert expected == actual
    second = run_scenario(sc, tmp_path / "again", mode)
    assert first.normalised() == second.normalised()


@pytest.mark.parametrize(("name", "mode"), CELLS, ids=[f"{n}-{m}" for n, m in CELLS])
def test_builtin_ledger_holds_each_executed_call_once(
    name: str, mode: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """Without a crash, the ledger has one started and one finished record for every tool
    execution the runtime stored (rejected calls never ran), and nothing else."""
    out = baseline(name, mode, tmp_path_factory)
    executed = sorted(
        (e.name, json.dumps(json.loads(e.arguments), sort_keys=True, separators=(",", ":")))
        for run in out.runs
        for e in run.tool_executions
        if e.status != "rejected"
    )
    expected = sorted([(t, a, phase) for t, a in executed for phase in ("finished", "started")])
    actual = sorted((e.tool, e.arguments, e.phase) for e in out.ledger)
    assert expected == actual


def test_descriptions_are_one_line() -> None:
    """`killpoint scenarios` shows one line per scenario."""
    expected = [(name, True) for name in scenarios.BUILTINS]
    actual = [
        (name, "\n" not in desc and 0 < len(desc) <= 160) for name, desc in scenarios.describe()
    ]
    assert expected == actual


def test_research_is_five_model_turns_and_four_batches(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """research: search, 3 single fetches, a summary: 5 requests, 4 one-call batches."""
    out = baseline("research", "tool", tmp_path_factory)
    batches = [len(m.tool_calls) for m in out.runs[0].messages if m.tool_calls]
    assert (5, [1, 1, 1, 1]) == (len(out.traffic), batches)
    assert research.SUMMARY == out.results[0].content


def test_parallel_fetch_batches_three_calls_following_links(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """parallel-fetch: two batches of 3; the second batch fetches the pages the first linked."""
    out = baseline("parallel-fetch", "tool-batch", tmp_path_factory)
    batches = [
        [json.loads(c.arguments)["page"] for c in m.tool_calls]
        for m in out.runs[0].messages
        if m.tool_calls
    ]
    first = list(parallel_fetch.FIRST)
    assert [first, [parallel_fetch.LINKS[p] for p in first]] == batches


def test_long_chain_factory_builds_n_steps(tmp_path: Path) -> None:
    """long_chain(n) is n one-call batches, each step fed the previous result."""
    sc = long_chain.long_chain(4)
    out = run_scenario(sc, tmp_path, "tool")
    steps = [json.loads(e.arguments) for e in out.runs[0].tool_executions]
    carries = [long_chain.SEED, *[int(e.result) for e in out.runs[0].tool_executions][:-1]]
    expected = ("long-chain-4", [{"step": k + 1, "carry": c} for k, c in enumerate(carries)])
    assert expected == (sc.name, steps)
    assert sc.expected[0].content == out.results[0].content
    with pytest.raises(ValueError, match="at least 1 step"):
        long_chain.long_chain(0)


def test_tool_error_stores_the_error_and_recovers(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """tool-error: the raising call's result is an error the model reads; a third call
    recovers; the ledger marks the raising call finished too."""
    out = baseline("tool-error", "tool", tmp_path_factory)
    execs = [(json.loads(e.arguments)["source"], e.status) for e in out.runs[0].tool_executions]
    assert [("primary", "error"), ("archive", "ok"), ("backup", "ok")] == execs
    error = out.runs[0].tool_executions[0].result
    assert "MirrorDown" in error and "refused the connection" in error
    assert tool_error.report_text("backup") in (out.results[0].content or "")


def test_confirm_pauses_twice_then_approves_and_rejects(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """confirm: PAUSED for send_email (approved, it runs), PAUSED for delete_mailbox
    (rejected, it never runs), then COMPLETED."""
    out = baseline("confirm", "runs", tmp_path_factory)
    statuses = [(r.status, [name for _, name in r.pending]) for r in out.seen]
    expected = [("PAUSED", ["send_email"]), ("PAUSED", ["delete_mailbox"]), ("COMPLETED", [])]
    assert expected == statuses
    execs = [(e.name, e.status) for e in out.runs[0].tool_executions]
    assert [("draft_email", "ok"), ("send_email", "ok"), ("delete_mailbox", "rejected")] == execs
    assert "delete_mailbox" not in {e.tool for e in out.ledger}
    assert {"send_email": True, "delete_mailbox": False} == dict(confirm.SCENARIO.confirm)


def test_flaky_model_retries_the_429_errors_on_the_500_and_continues(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """flaky-model: the SDK retries the 429; the 500 outlasts max_retries=1 and the run
    ends ERROR; continued once (the fault is spent), it completes."""
    out = baseline("flaky-model", "tool-batch", tmp_path_factory)
    assert [429, 200, 200, 500, 500, 200, 200] == [status for _, status, _ in out.traffic]
    assert ["ERROR", "COMPLETED"] == [r.status for r in out.seen]
    assert flaky_model.MAX_RETRIES == flaky_model.SCENARIO.max_retries


def test_flaky_model_without_continue_stays_error(tmp_path: Path) -> None:
    """flaky-model with continue_on_error=0 ends ERROR, as the 500 fault documents."""
    sc = dataclasses.replace(flaky_model.SCENARIO, continue_on_error=0)
    out = run_scenario(sc, tmp_path, "runs")
    assert ["ERROR"] == [r.status for r in out.results]
    assert "InternalServerError" in (out.runs[0].error or "")


def test_cancel_ends_cancelled_after_the_turn_and_refuses_continue(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """cancel: cancelled while model turn 3 is answered, the run stops after that batch
    (3 requests, 3 calls), is CANCELLED in the store, and continue_run refuses it."""
    out = baseline("cancel", "tool", tmp_path_factory)
    assert (3, "CANCELLED") == (len(out.traffic), out.runs[0].status.value)
    with pytest.raises(RunNotContinuable, match="CANCELLED"):
        out.driver.agent.continue_run(out.results[0].run_id, "s1")
    assert cancel.CANCEL_AT_TURN == out.scenario.cancel_at_turn


@pytest.mark.parametrize("name", ["side-effects", "side-effects-idempotent"])
def test_side_effect_tools_see_idempotency_keys_only_when_idempotent(
    name: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """side-effects gets no keys (plain tools); side-effects-idempotent records the
    runtime's idempotency key of every call in the ledger."""
    out = baseline(name, "tool", tmp_path_factory)
    keys = sorted(e.idempotency_key for e in out.runs[0].tool_executions)
    recorded = sorted({e.key for e in out.ledger}, key=str)
    expected = keys if name == "side-effects-idempotent" else [None]
    assert expected == recorded


@pytest.mark.parametrize(
    ("scenario", "second_effects"),
    [(side_effects.SCENARIO, True), (side_effects.IDEMPOTENT_SCENARIO, False)],
    ids=["plain", "idempotent"],
)
def test_rerunning_a_run_repeats_plain_effects_but_not_keyed_ones(
    scenario: scenarios.Scenario, second_effects: bool, tmp_path: Path
) -> None:
    """The same run again (fresh store, same ledger: same run ids, so same keys): plain
    tools charge and send again; idempotent tools record effect=False for every call."""
    ledger = tmp_path / "shared-ledger.jsonl"
    run_scenario(scenario, tmp_path / "a", "tool-batch", ledger_path=ledger)
    out = run_scenario(scenario, tmp_path / "b", "tool-batch", ledger_path=ledger)
    started = [e.effect for e in out.ledger if e.phase == "started"]
    assert [True] * 3 + [second_effects] * 3 == started


def test_large_output_results_are_over_a_mebibyte_and_intact(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """large-output: every stored tool result is at least 1 MiB and equal to what the tool
    returned; the model's summary (lengths and sha256) matches."""
    out = baseline("large-output", "tool", tmp_path_factory)
    results = [(e.result, len(e.result) >= 1 << 20) for e in out.runs[0].tool_executions]
    expected = [(large_output.table_dump(t), True) for t in large_output.TABLES]
    assert expected == results


def test_hostile_content_round_trips_unchanged(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """hostile-content: each payload comes back from the store byte for byte, as a tool
    result and inside the save_note argument; the final content carries the HTML."""
    out = baseline("hostile-content", "tool", tmp_path_factory)
    execs = out.runs[0].tool_executions
    assert list(hostile_content.PAYLOADS.values()) == [e.result for e in execs[:-1]]
    note = json.loads(execs[-1].arguments)["text"]
    assert hostile_content.note(list(hostile_content.PAYLOADS.values())) == note
    assert "\x00" in note and "\u202e" in note and "<script>" in note and "\x1b[" in note
    assert hostile_content.PAYLOADS["html"] in (out.results[0].content or "")


def test_multi_run_answers_from_the_earlier_runs(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """multi-run: run 2 sees run 1 in its history, run 3 sums what runs 1 and 2 found."""
    out = baseline("multi-run", "tool-batch", tmp_path_factory)
    args = [json.loads(e.arguments) for run in out.runs for e in run.tool_executions]
    expected = [{"city": "Lisbon"}, {"city": "Porto"}, {"numbers": [545_923, 231_800]}]
    assert expected == args
    assert [e.content for e in multi_run.SCENARIO.expected] == [r.content for r in out.results]


def test_multi_run_without_history_answers_differently(tmp_path: Path) -> None:
    """The script depends on the history: with the runtime's history off, runs 2 and 3
    do not end as expected (so a runtime that loses history is caught)."""

    def no_history(driver: object) -> None:
        driver.agent.add_history = False  # type: ignore[attr-defined]

    out = run_scenario(multi_run.SCENARIO, tmp_path, "runs", configure=no_history)
    expected = [True, False, False]
    actual = [
        r.content == e.content
        for r, e in zip(out.results, multi_run.SCENARIO.expected, strict=False)
    ]
    assert expected == actual
    assert "no earlier city" in (out.results[1].content or "")


@pytest.mark.parametrize("mode", ["runs", "tool-batch", "tool"])
def test_session_state_counts_and_notes_each_call_once(
    mode: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """session-state: the tools' updates reach the session's state once each, across
    both runs (run 2 counts on from run 1), and the invariant holds on the stored session."""
    out = baseline("session-state", mode, tmp_path_factory)
    session = ReferenceAdapter().read_session(out.driver.agent.db.url, SESSION)
    assert session is not None
    assert {"count": 5, "notes": ["pear is ripe", "kiwi came last"]} == session["state"]
    assert [] == session_state.invariant(session)


def test_session_state_invariant_names_an_update_applied_twice() -> None:
    """The invariant reads the calls from the messages and the state from either form
    (the reference runtime's dict, agno's session data): a count or a note too many is
    named, and so is a missing one."""
    run = {
        "messages": [
            {"role": "assistant", "tool_calls": [{"name": "tally", "arguments": '{"item": "a"}'}]},
            {"role": "assistant", "tool_calls": [{"name": "note", "arguments": '{"text": "x"}'}]},
        ]
    }
    good = {"count": 1, "notes": ["x"]}
    assert [] == session_state.invariant({"state": good, "runs": {"r": run}})
    agno_form = {"session_state": good, "session_metrics": {"input_tokens": 3}}
    assert [] == session_state.invariant({"state": agno_form, "runs": {"r": run}})
    twice = {"state": {"count": 2, "notes": ["x", "x"]}, "runs": {"r": run}}
    assert [
        "the session's count is 2 but its runs called tally 1 time",
        "the session's notes are ['x', 'x'] but the note calls were ['x']",
    ] == session_state.invariant(twice)
    assert ["the session's count is 0 but its runs called tally 1 time"] == (
        session_state.invariant({"state": {"notes": ["x"]}, "runs": {"r": run}})
    )


def test_ledger_multiset_ignores_interleaving() -> None:
    """The normaliser sorts ledger records, so concurrent calls of a batch compare equal
    in any order, but a missing or extra record does not."""
    a = scenarios.Entry("s", "t", '{"a":1}', None, "started", True, 1, 0.0)
    b = scenarios.Entry("s", "t", '{"a":2}', None, "started", True, 2, 1.0)
    assert ledger_multiset([a, b]) == ledger_multiset([b, a])
    assert ledger_multiset([a, b]) != ledger_multiset([a, a])


@pytest.mark.parametrize("mode", ["runs", "tool-batch", "tool"])
def test_reserve_is_cancelled_after_its_second_batch_with_each_item_counted_once(
    mode: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """reserve: cancelled while turn 2 is asked for, the run stops after turn 2's batch
    (2 requests, 4 reservations), CANCELLED; every call had its own idempotency key, and
    the session's state counts each item once (the invariant holds on the stored session)."""
    out = baseline("reserve", mode, tmp_path_factory)
    assert (2, "CANCELLED") == (len(out.traffic), out.runs[0].status.value)
    keys = {e.idempotency_key for e in out.runs[0].tool_executions}
    assert 4 == len(keys) and {e.key for e in out.ledger} == keys
    session = ReferenceAdapter().read_session(out.driver.agent.db.url, SESSION)
    assert session is not None
    assert {"reserved": {"a": 1, "b": 1, "c": 1, "d": 1}} == session["state"]
    assert [] == reserve.invariant(session)


def test_reserve_invariant_names_an_item_counted_twice() -> None:
    call = {"name": "reserve", "arguments": '{"item": "a"}'}
    run = {"messages": [{"role": "assistant", "tool_calls": [call]}]}
    assert [] == reserve.invariant({"state": {"reserved": {"a": 1}}, "runs": {"r": run}})
    (problem,) = reserve.invariant({"state": {"reserved": {"a": 2}}, "runs": {"r": run}})
    assert "{'a': 2}" in problem and "{'a': 1}" in problem
