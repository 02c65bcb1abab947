"""agno 3.1 (the optional extra `killpoint[agno]`) under test, unmodified.

Every built-in scenario's baseline under agno, in both conversation styles; the classic
demo's cells pinned to the verdicts and evidence killpoint finds on agno (so a change in
agno's behaviour fails here); both model id styles on the wire and across a fresh
process. Skipped, with the reason, only when agno cannot be imported.
"""

# ruff: noqa: SIM300
from __future__ import annotations

import asyncio
import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

os.environ.setdefault("AGNO_TELEMETRY", "false")  # before agno is imported: no network here

from killpoint import kinds
from killpoint.adapters import agno as agno_adapter

PROBLEM = agno_adapter.import_problem()
if PROBLEM is not None:
    pytest.skip(
        f"agno is not installed ({PROBLEM}); pip install 'killpoint[agno]'",
        allow_module_level=True,
    )

from killpoint import scenarios  # noqa: E402
from killpoint.adapters.agno import (  # noqa: E402
    CHAINED_MODEL_ID,
    EXCLUDED,
    TRANSCRIPT_MODEL_ID,
    AgnoAdapter,
    AgnoDriver,
)
from killpoint.adapters.registry import load_adapter  # noqa: E402
from killpoint.cli.demo import run_demo  # noqa: E402
from killpoint.engine.campaign import Campaign, CampaignConfig  # noqa: E402
from killpoint.engine.engine import SESSION_ID, Engine  # noqa: E402
from killpoint.engine.options import EngineConfig  # noqa: E402
from killpoint.errors import AdapterError  # noqa: E402
from killpoint.judge.oracle import comparable  # noqa: E402
from killpoint.scenarios import Ledger, RunResult, Scenario, ScriptedModel, drive  # noqa: E402
from killpoint.values.cell import Cell  # noqa: E402
from killpoint.values.modes import find, runnable  # noqa: E402
from tests.harness.kept_ledger import repeated_in_ledger, repeats_named  # noqa: E402
from tests.harness.live_workers import assert_no_worker_alive, worker_pids  # noqa: E402

CHAINED = "killpoint.adapters.agno:chained"
STYLES = {"transcript": TRANSCRIPT_MODEL_ID, "chained": CHAINED_MODEL_ID}
ROWS = [
    (name, mode)
    for name, scenario in scenarios.BUILTINS.items()
    for mode in ("runs", "tool-batch")
    if not (scenario.mid_run_only and mode == "runs")
]


# -- helpers ---------------------------------------------------------------------------------


@dataclasses.dataclass
class Ran:
    results: list[RunResult]
    session: dict[str, Any] | None
    ledger: list[tuple[str, str]]  # (tool, arguments) of every effect that happened
    problems: list[str]  # adapter.inspect() of the final store
    traffic: list[dict[str, Any]]  # request bodies the scripted model received


def run_in_process(
    scenario: Scenario, mode: str, tmp_path: Path, model_id: str = TRANSCRIPT_MODEL_ID
) -> Ran:
    """The scenario to its end through agno in this process (no instrumentation)."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    ledger = Ledger(tmp_path / "ledger.jsonl", scenario.name)
    driver = AgnoDriver(scenario, url, mode, ledger, model_id=model_id)
    model = ScriptedModel(
        scenario.script, tmp_path / "model", faults=scenario.faults, record_traffic=True
    )
    try:
        with model:
            results = asyncio.run(drive(scenario, driver, model, session_id="s"))
    finally:
        driver.dispose()
    adapter = AgnoAdapter(model_id)
    return Ran(
        results=results,
        session=adapter.read_session(url, "s"),
        ledger=[e.signature for e in ledger.entries() if e.phase == "started" and e.effect],
        problems=[p if isinstance(p, str) else p.sentence for p in adapter.inspect(url, "s")],
        traffic=[json.loads(body) for body, _, _ in model.traffic],
    )


def stored_calls(session: dict[str, Any] | None, run: int = 0) -> list[str]:
    runs = list((session or {}).get("runs", {}).values())
    return [t["name"] for t in runs[run]["tool_executions"]]


def keys_anywhere(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from keys_anywhere(v)
    elif isinstance(value, list):
        for v in value:
            yield from keys_anywhere(v)


# -- the adapter -----------------------------------------------------------------------------


class TestAdapter:
    def test_registered_as_agno_with_runs_and_tool_batch(self) -> None:
        """agno runs `runs` and `tool-batch`; `tool` is declared with agno's own reason."""
        adapter = load_adapter("agno")
        assert isinstance(adapter, AgnoAdapter)
        assert ("runs", "tool-batch") == runnable(adapter.modes)
        assert "reserves" in (find(adapter.modes, "tool").unavailable or "")  # type: ignore[union-attr]
        assert CHAINED_MODEL_ID == load_adapter(CHAINED).model_id  # type: ignore[attr-defined]

    def test_a_missing_agno_names_the_extra(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(agno_adapter, "import_problem", lambda: "No module named 'agno'")
        with pytest.raises(AdapterError, match=r"pip install killpoint\[agno\]"):
            load_adapter("agno")

    def test_tool_mode_is_skipped_with_agnos_own_reason(self, tmp_path: Path) -> None:
        """By default only the modes agno can run; asked for `tool`, the row is skipped
        with the reason the adapter declares."""
        default = CampaignConfig(runtime="agno", scenarios=("research",), work_root=tmp_path)
        assert ("runs", "tool-batch") == default.mode_names()
        config = CampaignConfig(
            runtime="agno",
            scenarios=("research",),
            modes=("runs", "tool-batch", "tool"),
            work_root=tmp_path,
            keep="none",
        )
        rows, skipped = Campaign(config).rows()
        assert [
            ("agno", "research", "runs", "sqlite"),
            ("agno", "research", "tool-batch", "sqlite"),
        ] == rows
        assert [
            (
                "tool",
                "runtime 'agno' cannot run mode 'tool': agno 3.1 reserves "
                'checkpoint="tools" ("not available yet") and raises on it',
            )
        ] == [(s.mode, s.reason) for s in skipped]

    def test_an_empty_store_reads_as_nothing(self, tmp_path: Path) -> None:
        adapter = AgnoAdapter()
        url = f"sqlite:///{tmp_path / 'empty.db'}"
        assert 0 == adapter.progress(url, SESSION_ID)
        assert None is adapter.read_session(url, SESSION_ID)
        assert [] == adapter.inspect(url, SESSION_ID)
        assert None is adapter.lease_deadline(url, SESSION_ID)


# -- baselines: every built-in scenario ------------------------------------------------------

# Where agno's uninterrupted run does not end as the scenario expects, and why. Each is
# pinned: if agno changes, the test says so.
EXCLUSIONS = {
    "side-effects-idempotent": "agno gives tools no idempotency key: `idempotency_key` is "
    "a required parameter the model never fills, so agno refuses every call",
    "cancel": "a non-streaming agno run checks for cancellation only before and after the "
    "model's tool loop, so all six batches run before the run ends CANCELLED",
}


@pytest.mark.parametrize("style", sorted(STYLES))
@pytest.mark.parametrize(("name", "mode"), ROWS)
def test_baseline_of_every_builtin_scenario(
    name: str, mode: str, style: str, tmp_path: Path
) -> None:
    """Each built-in scenario runs to its end under agno: the statuses the scenario
    expects, one stored run per input, and (exclusions aside) the expected content and
    the expected tool executions, counted in the ledger (what really ran)."""
    scenario = scenarios.BUILTINS[name]
    ran = run_in_process(scenario, mode, tmp_path, STYLES[style])
    assert [e.status for e in scenario.expected] == [r.status for r in ran.results]
    runs = list((ran.session or {}).get("runs", {}).values())
    assert [r.status for r in ran.results] == [r["status"] for r in runs]
    assert [r.content for r in ran.results] == [r["content"] for r in runs]
    assert not set(keys_anywhere(ran.session)) & set(EXCLUDED)
    executed = [tool for tool, _ in ran.ledger]
    called = [[c["name"] for m in r["messages"] for c in m["tool_calls"]] for r in runs]
    if name == "side-effects-idempotent":
        assert [["charge_card", "send_email", "send_sms"]] == called
        assert [] == executed
        assert "Missing required argument" in (ran.results[0].content or "")
    elif name == "reserve":
        # Cancelled at turn 2: agno words the cancelled run's content itself.
        assert ["Run s-run1 was cancelled"] == [r.content for r in ran.results]
    elif name == "cancel":
        assert [["process_batch"] * 6] == called
        assert ["process_batch"] * 6 == executed
    else:
        assert [e.content for e in scenario.expected] == [r.content for r in ran.results]
        assert [list(e.calls or ()) for e in scenario.expected] == called
        rejected = [c for c, ok in scenario.confirm.items() if not ok]
        # A batch's calls run concurrently: the ledger's order within a batch may vary.
        assert sorted(c for cs in called for c in cs if c not in rejected) == sorted(executed)


def test_continued_runs_keep_only_later_tool_executions(tmp_path: Path) -> None:
    """agno finding, no crash needed: a run continued with acontinue_run (after PAUSED or
    ERROR) is stored with the tool executions of the last leg only; the messages still
    hold every call and result, so the store contradicts itself."""
    confirm = run_in_process(scenarios.get("confirm"), "tool-batch", tmp_path / "confirm")
    assert ["delete_mailbox"] == stored_calls(confirm.session)
    assert ["draft_email", "send_email"] == [t for t, _ in confirm.ledger]
    flaky = run_in_process(scenarios.get("flaky-model"), "tool-batch", tmp_path / "flaky")
    assert ["get_quote"] == stored_calls(flaky.session)
    assert ["get_quote"] * 3 == [t for t, _ in flaky.ledger]
    assert [
        "run s-run1: call ['fc_339c353ed061ce592b3d11a2'] at message 1 has no tool execution",
        "run s-run1: call ['fc_40226735a1259f5654462a04'] at message 3 has no tool execution",
    ] == flaky.problems


def test_history_runs_store_a_checkpoint_index_past_their_messages(tmp_path: Path) -> None:
    """agno finding: with add_history_to_context, a tool-batch checkpoint counts the
    history messages it sent the model in last_checkpoint_at_message_index, then stores
    the run without them."""
    ran = run_in_process(scenarios.get("multi-run"), "tool-batch", tmp_path)
    marks = [
        (len(r["messages"]), r["last_checkpoint_at_message_index"])
        for r in (ran.session or {})["runs"].values()
    ]
    assert [(4, 3), (4, 7), (4, 11)] == marks
    assert [
        "run s-run2: last_checkpoint_at_message_index 7 beyond 4 messages",
        "run s-run3: last_checkpoint_at_message_index 11 beyond 4 messages",
    ] == ran.problems


# -- both model id styles --------------------------------------------------------------------


def test_the_two_styles_on_the_wire(tmp_path: Path) -> None:
    """A non-reasoning id resends the whole transcript each turn; a reasoning id chains
    turns with previous_response_id and sends only the new tool outputs."""
    research = scenarios.get("research")
    transcript = run_in_process(research, "tool-batch", tmp_path / "t", TRANSCRIPT_MODEL_ID)
    chained = run_in_process(research, "tool-batch", tmp_path / "c", CHAINED_MODEL_ID)
    assert [None] * 5 == [b.get("previous_response_id") for b in transcript.traffic]
    assert [1, 3, 5, 7, 9] == [len(b["input"]) for b in transcript.traffic]
    assert [None, True, True, True, True] == [
        b.get("previous_response_id", "").startswith("resp_") or None for b in chained.traffic
    ]
    assert [1, 1, 1, 1, 1] == [len(b["input"]) for b in chained.traffic]
    assert ["function_call_output"] * 4 == [b["input"][0]["type"] for b in chained.traffic[1:]]
    assert comparable(transcript.session) != comparable(chained.session)  # model ids differ
    assert transcript.results[0].content == chained.results[0].content


def test_a_fresh_agent_continues_the_chain(tmp_path: Path) -> None:
    """The chained style after an ERROR, continued by a new Agent, db and model client
    (as a fresh worker would): its first request chains on the stored response id and
    the scripted model, which keeps its responses on disk, answers it."""
    flaky = dataclasses.replace(scenarios.get("flaky-model"), continue_on_error=0)
    url = f"sqlite:///{tmp_path / 'store.db'}"
    ledger = Ledger(tmp_path / "ledger.jsonl", flaky.name)
    first = AgnoDriver(flaky, url, "tool-batch", ledger, model_id=CHAINED_MODEL_ID)
    with ScriptedModel(flaky.script, tmp_path / "model", faults=flaky.faults) as model:
        [ended] = asyncio.run(drive(flaky, first, model, session_id="s"))
    first.dispose()
    assert "ERROR" == ended.status
    fresh = AgnoDriver(flaky, url, "tool-batch", ledger, model_id=CHAINED_MODEL_ID)
    model = ScriptedModel(
        flaky.script, tmp_path / "model", faults=flaky.faults, record_traffic=True
    )
    with model:
        resumed = asyncio.run(fresh.resume(ended.run_id, session_id="s", confirmations={}))
    fresh.dispose()
    assert ("COMPLETED", flaky.expected[0].content) == (resumed.status, resumed.content)
    requests = [json.loads(body) for body, _, _ in model.traffic]
    assert requests[0].get("previous_response_id", "").startswith("resp_")
    assert [200] * len(requests) == [status for _, status, _ in model.traffic]


# -- the classic demo, pinned ----------------------------------------------------------------


@pytest.mark.slow
class TestClassicDemo:
    """research under agno in a worker, killed at a point found by polling agno's db,
    continued in place with acontinue_run in a fresh worker, compared with the baseline."""

    def test_tool_batch_after_the_first_checkpoint(self, tmp_path: Path) -> None:
        engine = Engine(EngineConfig(work_root=tmp_path / "work", keep="all"))
        cell = Cell(
            "agno", "research", "tool-batch", "sqlite", kinds.parse_schedule("after-checkpoint:1")
        )
        base = engine.baseline(cell.row)
        assert (None, None, 5) == (base.problem, base.nondeterministic, base.checkpoints)
        result = engine.run_cell(cell)
        # The kill: checkpoint 1 (RUNNING, the search batch) confirmed in agno's db.
        assert {
            "checkpoints": 1,
            "runs": [
                {
                    "run": 1,
                    "status": "RUNNING",
                    "messages": 3,
                    "last_checkpoint_at_message_index": 3,
                    "tool_executions": 1,
                }
            ],
        } == result.store_at_crash
        assert [-9, 0] == result.exit_codes
        events = [e.text for e in result.timeline]
        assert "store confirms 1 checkpoint at after-checkpoint:1" in events
        assert "acknowledged killpoint-session-run1 COMPLETED" in events  # same run id: in place
        # What killpoint finds: the continued run drops the tool execution made before
        # the crash; everything else equals the baseline.
        assert ("diverged", False, 0, 0) == (
            result.verdict,
            result.expected,
            result.duplicates,
            result.bound,
        )
        assert [
            (
                "tool-executions-lost",
                "1 of the 4 tool executions in the baseline is missing from the resumed run: "
                'search({"query":"Research crash consistency of agent runtimes."})',
            )
        ] == [(f["kind"], f["sentence"]) for f in result.findings]
        assert (
            "killpoint replay agno/research/tool-batch/sqlite/after-checkpoint:1" == result.replay
        )
        [work] = [p for p in (tmp_path / "work").iterdir() if p.name.endswith("after-checkpoint_1")]
        final = comparable(AgnoAdapter().read_session(f"sqlite:///{work / 'store.db'}", SESSION_ID))
        expected = comparable(base.session)
        assert expected is not None and final is not None
        [b], [f] = expected["runs"], final["runs"]
        assert b["tool_executions"][1:] == f["tool_executions"]
        assert {k: v for k, v in b.items() if k != "tool_executions"} == {
            k: v for k, v in f.items() if k != "tool_executions"
        }
        assert expected["state"] == final["state"]
        assert_no_worker_alive(worker_pids([result]))

    def test_runs_mode_mid_run_loses_the_run(self, tmp_path: Path) -> None:
        """In "runs" agno writes nothing before the run ends: killed mid-run, neither the
        run nor the session is in the store: lost, as agno documents (expected)."""
        engine = Engine(EngineConfig(work_root=tmp_path / "work", keep="none"))
        cell = Cell("agno", "research", "runs", "sqlite", kinds.parse_schedule("mid-model:2"))
        result = engine.run_cell(cell)
        assert ("lost", True) == (result.verdict, result.expected)
        assert (
            "run 1 is not in the store after the crash (no checkpoint of it had landed)"
            == result.detail
        )
        assert {"session": None, "checkpoints": 0} == result.store_at_crash
        assert [-9] == result.exit_codes
        assert_no_worker_alive(worker_pids([result]))

    def test_the_demo_command_tells_it(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert 0 == run_demo(mode="runs", runtime="agno")
        out = capsys.readouterr().out
        assert "no session row and no run row; checkpoints: 0" in out
        assert "lost (expected)" in out

    def test_the_chained_style_resumes_from_a_fresh_process(self, tmp_path: Path) -> None:
        """The same cells with a reasoning model id: the resumer's first request chains on
        a response id stored before the crash. After the last tool batch the resumed
        run equals the baseline; after the first, it has the same finding."""
        engine = Engine(EngineConfig(work_root=tmp_path / "work", keep="none"))
        late, early = (
            engine.run_cell(
                Cell(CHAINED, "research", "tool-batch", "sqlite", kinds.parse_schedule(p))
            )
            for p in ("after-checkpoint:4", "after-checkpoint:1")
        )
        assert ("ok", True, [-9, 0]) == (late.verdict, late.expected, late.exit_codes)
        assert ("diverged", ["tool-executions-lost"]) == (
            early.verdict,
            [f["kind"] for f in early.findings],
        )
        assert_no_worker_alive(worker_pids([late, early]))


@pytest.mark.slow
@pytest.mark.postgres
def test_the_demo_cell_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    """The same kill on agno's PostgresDb (a schema per cell, agno's db_schema set to
    it): the same checkpoint confirmed, the same finding."""
    engine = Engine(EngineConfig(store=pg_url, work_root=tmp_path / "work", keep="none"))
    cell = Cell(
        "agno", "research", "tool-batch", "postgresql", kinds.parse_schedule("after-checkpoint:1")
    )
    result = engine.run_cell(cell)
    assert ("diverged", [-9, 0]) == (result.verdict, result.exit_codes)
    assert ["tool-executions-lost"] == [f["kind"] for f in result.findings]
    assert 1 == (result.store_at_crash or {}).get("checkpoints")
    assert_no_worker_alive(worker_pids([result]))


# -- what the contract checks find in agno, pinned ------------------------------------------


def agno_cell(tmp_path: Path, scenario: str, schedule: str) -> Any:
    engine = Engine(EngineConfig(work_root=tmp_path / "work", keep="none"))
    return engine.run_cell(
        Cell("agno", scenario, "tool-batch", "sqlite", kinds.parse_schedule(schedule))
    )


def sentences(result: Any, kind: str) -> list[str]:
    return [f["sentence"] for f in result.findings if f["kind"] == kind]


@pytest.mark.slow
class TestContractFindings:
    def test_a_kill_between_the_two_transactions_applies_session_state_twice(
        self, tmp_path: Path
    ) -> None:
        """Killed after the session row (with the batch's state) committed and before the
        run row did, the resumed run redoes the batch and its tools update the state
        again: the tally counts 5 fruits in run 1 instead of 4, and a note is doubled."""
        result = agno_cell(tmp_path, "session-state", "mid-commit:2")
        assert ("diverged", False, [-9, 0]) == (result.verdict, result.expected, result.exit_codes)
        assert [
            "the session's count is 6 but its runs called tally 5 times",
            "the session's notes are ['pear is ripe', 'pear is ripe', 'kiwi came last'] but "
            "the note calls were ['pear is ripe', 'kiwi came last']",
        ] == sentences(result, "state-not-once")
        assert [
            "runs[0].content: 'Tallied apple, pear, fig, plum: plum tallied (4 so far).' in the "
            "baseline, 'Tallied apple, pear, fig, plum: plum tallied (5 so far).' in the resumed run"
        ] == sentences(result, "run-differs")[:1]
        assert_no_worker_alive(worker_pids([result]))

    def test_a_cancel_lets_every_remaining_batch_run(self, tmp_path: Path) -> None:
        """agno's non-streaming run checks for a cancel only around its tool loop: asked
        to cancel during model turn 3, it still requests turns 4 to 7 before it ends
        CANCELLED. Its baseline does so too: a late cancel of the row, found without a
        crash, and a cell whose resumed run does the same is not charged with it."""
        engine = Engine(EngineConfig(work_root=tmp_path / "work", keep="none"))
        cell = Cell(
            "agno", "cancel", "tool-batch", "sqlite", kinds.parse_schedule("after-checkpoint:1")
        )
        result = engine.run_cell(cell)
        assert [
            (
                "cancel-late",
                "a cancel was requested during model turn 3, and model turns 4..7 were "
                "requested before the run ended CANCELLED",
            )
        ] == [(f["kind"], f["sentence"]) for f in engine.baseline(cell.row).findings]
        assert [] == [f for f in result.findings if f["kind"].startswith("cancel")]

    def test_two_resumers_repeat_the_effects_whatever_else_differs(self, tmp_path: Path) -> None:
        """Without ownership both resumers drive the run, and every effect one of them
        repeats is counted beside the lost tool execution. How much each redoes is the
        race's to decide: released together, the second usually loads the run before the
        first has sent anything (the receipt's e-mail and SMS go out twice), but under load
        it can load after the sends (no repeat) or add its model turns to the session's
        metrics (`state-differs`). Nothing else may appear, and the count must match."""
        engine = Engine(EngineConfig(work_root=tmp_path / "work", keep="all"))
        cell = Cell(
            "agno", "side-effects", "tool-batch", "sqlite", kinds.parse_schedule("double-resume:1")
        )
        result = engine.run_cell(cell)
        assert ("duplicated", 0) == (result.verdict, result.bound)
        found = {f["kind"] for f in result.findings}
        assert {"two-drivers", "tool-executions-lost"} <= found
        assert found <= {
            "two-drivers",
            "tool-executions-lost",
            "effect-duplicated",
            "state-differs",
            "usage-differs",
        }
        repeats = repeated_in_ledger(result)
        assert (repeats, sum(repeats.values())) == (repeats_named(result), result.duplicates)
