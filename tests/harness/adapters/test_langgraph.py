"""LangGraph 1.2 (the optional extra `killpoint[langgraph]`) under test, unmodified.

The adapter's declarations; every built-in scenario's baseline in every mode; the count
of landed writes (`progress`) against the gates a real run passes, on SQLite and on
PostgreSQL; and a few cells per mode with real kills, pinned to the verdicts and the
evidence killpoint finds in LangGraph (so a change in LangGraph's behaviour fails here).
Skipped, with the reason, only when LangGraph cannot be imported.
"""

# ruff: noqa: SIM300
from __future__ import annotations

import asyncio
import dataclasses
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from killpoint.adapters import langgraph as langgraph_adapter

PROBLEM = langgraph_adapter.import_problem()
if PROBLEM is not None:
    pytest.skip(
        f"LangGraph is not installed ({PROBLEM}); pip install 'killpoint[langgraph]'",
        allow_module_level=True,
    )

import aiosqlite  # noqa: E402
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver  # noqa: E402
from langgraph.checkpoint.sqlite.aio import AsyncSqliteSaver  # noqa: E402

from killpoint import kinds, scenarios  # noqa: E402
from killpoint.adapters.checkpoint_gates import CheckpointGates  # noqa: E402
from killpoint.adapters.langgraph import LangGraphAdapter, savers  # noqa: E402
from killpoint.adapters.langgraph.agent import LangGraphDriver  # noqa: E402
from killpoint.adapters.registry import load_adapter  # noqa: E402
from killpoint.engine.campaign import Campaign, CampaignConfig  # noqa: E402
from killpoint.engine.engine import SESSION_ID, Engine  # noqa: E402
from killpoint.engine.options import EngineConfig  # noqa: E402
from killpoint.errors import AdapterError  # noqa: E402
from killpoint.scenarios import Ledger, RunResult, Scenario, ScriptedModel, drive, gates  # noqa: E402
from killpoint.scenarios.behaviours import BEHAVIOURS  # noqa: E402
from killpoint.values.cell import Cell, CellResult  # noqa: E402
from killpoint.values.modes import find, runnable  # noqa: E402
from killpoint.values.normal_form import validate_session  # noqa: E402
from killpoint.values.sentences import count  # noqa: E402
from tests.harness.kept_ledger import repeated_in_ledger, repeats_named  # noqa: E402
from tests.harness.live_workers import assert_no_worker_alive, worker_pids  # noqa: E402

MODES = ("sync", "async", "exit", "sync-send")
ROWS = [
    (name, mode)
    for name, scenario in scenarios.BUILTINS.items()
    for mode in MODES
    if scenario.cancel_at_turn is None
    and scenario.state_invariant is None
    and not (scenario.mid_run_only and mode == "exit")
]


# -- helpers ---------------------------------------------------------------------------------


@dataclasses.dataclass
class Ran:
    results: list[RunResult]
    session: dict[str, Any] | None
    ledger: list[tuple[str, str]]  # (tool, arguments) of every effect that happened
    problems: list[str]  # adapter.inspect() of the final store
    progress: int


def run_in_process(scenario: Scenario, mode: str, url: str, work: Path) -> Ran:
    """The scenario to its end through LangGraph in this process."""
    ledger = Ledger(work / "ledger.jsonl", scenario.name)
    durability, _, send = mode.partition("-")
    driver = LangGraphDriver(scenario, url, durability, ledger, send=send == "send")
    model = ScriptedModel(scenario.script, work / "model", faults=scenario.faults)

    async def go() -> list[RunResult]:
        try:
            with model:
                return await drive(scenario, driver, model, session_id="s")
        finally:
            await driver.aclose()

    results = asyncio.run(go())
    adapter = LangGraphAdapter()
    return Ran(
        results=results,
        session=adapter.read_session(url, "s"),
        ledger=[e.signature for e in ledger.entries() if e.phase == "started" and e.effect],
        problems=adapter.inspect(url, "s"),
        progress=adapter.progress(url, "s"),
    )


@pytest.fixture
def instrumented(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """This process instrumented as a worker is (savers.instrument), every gate traced;
    the savers' classes are restored afterwards."""
    for cls, attr in (
        (AsyncSqliteSaver, "aput"),
        (AsyncSqliteSaver, "aput_writes"),
        (AsyncPostgresSaver, "aput"),
        (AsyncPostgresSaver, "aput_writes"),
        (AsyncPostgresSaver, "_cursor"),
        (aiosqlite.Connection, "commit"),
    ):
        monkeypatch.setattr(cls, attr, getattr(cls, attr))
    trace: list[str] = []
    savers.instrument(CheckpointGates())
    gates.configure((), announce=None, tracer=trace.append)
    yield trace
    gates.disarm()


def landed(trace: list[str]) -> list[int]:
    return [g.number for e in trace if (g := gates.parse(e)) and g.phase == "landed" and g.number]


# -- the adapter -----------------------------------------------------------------------------


class TestAdapter:
    def test_registered_with_langgraphs_own_modes(self) -> None:
        """`langgraph` is built in, with LangGraph's durability levels as its modes (and a
        Send per call); exit persists nothing mid-run, sync-send each call's result, and
        async's writes lag the run."""
        adapter = load_adapter("langgraph")
        assert isinstance(adapter, LangGraphAdapter)
        assert MODES == runnable(adapter.modes)
        flags = {
            m.name: (m.persists_mid_run, m.results_per_call, m.writes_lag) for m in adapter.modes
        }
        assert {
            "sync": (True, False, False),
            "async": (True, False, True),
            "exit": (False, False, False),
            "sync-send": (True, True, False),
        } == flags
        assert 'durability="exit"' in (find(adapter.modes, "exit") or adapter.modes[0]).meaning

    def test_a_missing_langgraph_names_the_extra(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without LangGraph the runtime is refused with the install command."""
        monkeypatch.setattr(langgraph_adapter, "import_problem", lambda: "No module named 'x'")
        with pytest.raises(AdapterError, match=r"pip install killpoint\[langgraph\]"):
            load_adapter("langgraph")

    def test_cancel_is_skipped_with_the_reason(self, tmp_path: Path) -> None:
        """Open-source LangGraph cannot cancel a run durably: the `cancel` rows are skipped,
        every mode, with that reason; the other scenarios run."""
        config = CampaignConfig(
            runtime="langgraph", scenarios=("cancel", "research"), work_root=tmp_path
        )
        rows, skipped = Campaign(config).rows()
        assert [("langgraph", "research", m, "sqlite") for m in MODES] == rows
        assert [("cancel", m) for m in MODES] == [(s.scenario, s.mode) for s in skipped]
        assert all("no run cancellation" in s.reason for s in skipped)

    def test_session_state_is_skipped_with_the_reason(self, tmp_path: Path) -> None:
        """The graph keeps MessagesState only: the `session-state` rows are skipped, every
        mode, saying why."""
        config = CampaignConfig(
            runtime="langgraph", scenarios=("session-state", "research"), work_root=tmp_path
        )
        rows, skipped = Campaign(config).rows()
        assert [("langgraph", "research", m, "sqlite") for m in MODES] == rows
        assert [("session-state", m) for m in MODES] == [(s.scenario, s.mode) for s in skipped]
        assert all("no session state" in s.reason for s in skipped)

    def test_an_unknown_mode_name_is_refused(self, tmp_path: Path) -> None:
        """A mode name the adapter does not declare never reaches LangGraph."""
        adapter = LangGraphAdapter()
        ledger = Ledger(tmp_path / "ledger", "research")
        with pytest.raises(ValueError, match="choose from sync, async, exit, sync-send"):
            adapter.driver(
                scenarios.get("research"), "sqlite://", "tool-batch", ledger, lease_seconds=1
            )

    def test_postgres_options_reach_psycopg_as_keywords(self) -> None:
        """A lock-held cell's URL has two options separated by a space; psycopg must get
        both (as a libpq URI, the rendered '+' would end up in the schema name)."""
        from psycopg.conninfo import conninfo_to_dict

        url = (
            "postgresql+psycopg://kp:secret@127.0.0.1:5432/db?"
            "options=-csearch_path%3Dkp_1+-clock_timeout%3D100"
        )
        assert {
            "host": "127.0.0.1",
            "port": "5432",
            "user": "kp",
            "password": "secret",
            "dbname": "db",
            "options": "-csearch_path=kp_1 -clock_timeout=100",
        } == conninfo_to_dict(savers.conninfo(url))

    def test_an_empty_store_reads_as_nothing(self, store_url: str) -> None:
        """No checkpoint yet: no session, no landed write, nothing broken, no lease; a
        SQLite file that does not exist is not created by reading it."""
        adapter = LangGraphAdapter()
        assert (0, None, [], None) == (
            adapter.progress(store_url, SESSION_ID),
            adapter.read_session(store_url, SESSION_ID),
            adapter.inspect(store_url, SESSION_ID),
            adapter.lease_deadline(store_url, SESSION_ID),
        )
        if store_url.startswith("sqlite"):
            assert not Path(store_url.removeprefix("sqlite:///")).exists()


# -- baselines: every built-in scenario ------------------------------------------------------


@pytest.mark.parametrize(("name", "mode"), ROWS)
def test_baseline_of_every_builtin_scenario(name: str, mode: str, tmp_path: Path) -> None:
    """Each built-in scenario runs to its end under LangGraph: in the normal form, one run
    per input with the statuses and contents the scenario expects, the expected calls as
    tool executions, each executed once (the ledger), and a sound store."""
    scenario = scenarios.BUILTINS[name]
    ran = run_in_process(scenario, mode, f"sqlite:///{tmp_path / 'store.db'}", tmp_path)
    validate_session(ran.session)
    assert ran.session is not None
    runs = list(ran.session["runs"].values())
    assert [e.status for e in scenario.expected] == [r.status for r in ran.results]
    assert [r.status for r in ran.results] == [r["status"] for r in runs]
    assert [e.content for e in scenario.expected] == [r["content"] for r in runs]
    assert [list(e.calls or ()) for e in scenario.expected] == [
        [t["name"] for t in r["tool_executions"]] for r in runs
    ]
    rejected = [c for c, ok in scenario.confirm.items() if not ok]
    executed = [c for e in scenario.expected for c in e.calls or () if c not in rejected]
    # A batch's calls run concurrently: the ledger's order within a batch may vary.
    assert sorted(executed) == sorted(tool for tool, _ in ran.ledger)
    assert [] == ran.problems
    assert [(len(r["messages"]), r["last_checkpoint_at_message_index"]) for r in runs] == [
        (len(r["messages"]), len(r["messages"])) for r in runs
    ]
    assert {"values": {}, "forks": 0} == ran.session["state"]


def test_a_run_in_the_normal_form(tmp_path: Path) -> None:
    """research, read back: the user input, the model's calls as JSON text, each result a
    tool execution at its turn and index, the usage summed over the model's replies."""
    ran = run_in_process(
        scenarios.get("research"), "sync", f"sqlite:///{tmp_path / 'store.db'}", tmp_path
    )
    assert ["s-run1"] == list((ran.session or {})["runs"])
    [run] = (ran.session or {})["runs"].values()
    assert "Research crash consistency of agent runtimes." == run["input"]
    assert ["user", "assistant", "tool", "assistant"] == [m["role"] for m in run["messages"][:4]]
    assert [{"name": "fetch_detail", "arguments": '{"result_id": "r1"}'}] == run["messages"][3][
        "tool_calls"
    ]
    assert [("search", 1, 0), ("fetch_detail", 2, 0), ("fetch_detail", 3, 0)] == [
        (t["name"], t["turn"], t["call_index"]) for t in run["tool_executions"][:3]
    ]
    assert "Full text of r1: findings about the query." == run["tool_executions"][1]["result"]
    assert {
        "input_tokens": 676,
        "output_tokens": 255,
        "total_tokens": 931,
        "model_calls": 5,
    } == run["usage"]
    assert (None, []) == (run["error"], run["pending_confirmations"])


# -- progress: one per landed gate -----------------------------------------------------------


@pytest.mark.parametrize("mode", ["sync", "async", "sync-send"])
def test_progress_counts_exactly_the_landed_gates(
    mode: str, tmp_path: Path, instrumented: list[str]
) -> None:
    """Every durable write of LangGraph (a checkpoint, a task's pending writes) passes
    writing, committing and landed once, numbered in the order they reach the store
    (never two open at once), and the store counts exactly the writes that landed: the
    checkpoints' rows, and one per task whose writes were saved."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    ran = run_in_process(scenarios.get("parallel-fetch"), mode, url, tmp_path)
    numbers = landed(instrumented)
    assert list(range(1, len(numbers) + 1)) == numbers
    assert len(numbers) == ran.progress
    phases = [
        (g.number, g.phase)
        for e in instrumented
        if (g := gates.parse(e)) and g.kind == "checkpoint"
    ]
    assert [(n, p) for n in numbers for p in ("writing", "committing", "landed")] == phases
    with sqlite3.connect(tmp_path / "store.db") as conn:
        stored = conn.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
        tasks = conn.execute("SELECT COUNT(DISTINCT checkpoint_id || task_id) FROM writes")
        kinds = conn.execute("SELECT kind, COUNT(*) FROM killpoint_checkpoints GROUP BY kind")
        assert {"checkpoint": stored, "writes": tasks.fetchone()[0]} == dict(kinds.fetchall())
    # The input's checkpoint, then 6 supersteps (__start__, 3 model turns, 2 batches): a
    # task's writes and a checkpoint each. With a Send per call, each batch is 3 tasks.
    assert {"sync": 13, "async": 13, "sync-send": 17}[mode] == ran.progress


@pytest.mark.postgres
def test_progress_on_postgresql(pg_url: str, tmp_path: Path, instrumented: list[str]) -> None:
    """The same count through LangGraph's PostgreSQL saver, whose writes have no commit
    event: `committing` is placed in the write's pipeline, before it is synced."""
    ran = run_in_process(scenarios.get("parallel-fetch"), "sync", pg_url, tmp_path)
    numbers = landed(instrumented)
    assert list(range(1, 14)) == numbers
    assert 13 == ran.progress
    committing = [
        g.number for e in instrumented if (g := gates.parse(e)) and g.phase == "committing"
    ]
    assert numbers == committing
    assert [e.content for e in scenarios.get("parallel-fetch").expected] == [
        r.content for r in ran.results
    ]


# -- cells with real kills, pinned -----------------------------------------------------------


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    """One engine for the pinned SQLite cells (their baselines are made once)."""
    return Engine(EngineConfig(work_root=tmp_path_factory.mktemp("work"), keep="all"))


def run_cell(engine: Engine, scenario: str, mode: str, schedule: str) -> CellResult:
    result = engine.run_cell(
        Cell("langgraph", scenario, mode, "sqlite", kinds.parse_schedule(schedule))
    )
    assert_no_worker_alive(worker_pids([result]))
    return result


@pytest.mark.slow
class TestSync:
    """durability="sync": each superstep's checkpoint lands before the next superstep."""

    def test_a_kill_after_a_batchs_pending_writes_resumes_without_rerunning_it(
        self, engine: Engine
    ) -> None:
        """Checkpoint 12 of research is the second fetch's pending write, its superstep's
        checkpoint not yet written: the store holds the result (6 messages, 5 covered by
        the checkpoint), and the resume applies it instead of fetching again."""
        result = run_cell(engine, "research", "sync", "after-checkpoint:12")
        assert {
            "checkpoints": 12,
            "runs": [
                {
                    "run": 1,
                    "status": "RUNNING",
                    "messages": 6,
                    "last_checkpoint_at_message_index": 5,
                    "tool_executions": 2,
                }
            ],
        } == result.store_at_crash
        assert ("ok", True, 0, 0, [-9, 0]) == (
            result.verdict,
            result.expected,
            result.duplicates,
            result.bound,
            result.exit_codes,
        )
        assert (
            "killpoint replay langgraph/research/sync/sqlite/after-checkpoint:12" == result.replay
        )

    def test_a_kill_mid_batch_repeats_the_call_in_flight_once(self, engine: Engine) -> None:
        """The whole batch is one task: the call in flight had its effect and no durable
        result, so the resume makes it again, once, within the bound."""
        result = run_cell(engine, "research", "sync", "mid-batch:2:0")
        assert ("ok", 1, 1) == (result.verdict, result.duplicates, result.bound)

    def test_a_kill_inside_a_commit_leaves_the_previous_checkpoint(self, engine: Engine) -> None:
        """Killed at the COMMIT of checkpoint 6 (the search's pending write): the store
        holds 5, the search ran and is repeated once."""
        result = run_cell(engine, "research", "sync", "mid-commit:6")
        assert (5, "ok", 1, 1) == (
            (result.store_at_crash or {}).get("checkpoints"),
            result.verdict,
            result.duplicates,
            result.bound,
        )

    def test_a_woken_stale_worker_writes_a_second_branch(self, engine: Engine) -> None:
        """No run ownership in the open-source library: a worker paused after checkpoint 6
        and woken after another finished the run goes on with its own run and writes a
        second branch of checkpoints under the same parent."""
        result = run_cell(engine, "research", "sync", "sigstop:6")
        assert ("corrupt", False) == (result.verdict, result.expected)
        stale = [f for f in result.findings if f["kind"] == "stale-write"]
        assert stale, result.detail
        assert (
            "at state.forks: 0 in the store after the takeover, 1 in the store after the "
            "stale worker woke"
        ) in result.detail
        assert [0, 0] == result.exit_codes  # both drove the run to its end

    def test_two_resumers_both_drive_the_run_and_every_repeat_is_counted(
        self, engine: Engine
    ) -> None:
        """Killed after checkpoint 5 (the model asked for charge_card; nothing ran), two
        resumers released at once both drive the run to its end. Each repeats what it runs
        before the other's checkpoint lands (the charge, the e-mail, the SMS; how many
        depends on how the two interleave), and the cell counts every repeat the ledger
        holds, none of them allowed. Under load the second can load the run after the first
        has run everything: then it drove nothing (the ledger and the model's log say so),
        there is nothing to count, and nothing may be named."""
        result = run_cell(engine, "side-effects", "sync", "double-resume:5")
        drivers = [f["sentence"] for f in result.findings if f["kind"] == "two-drivers"]
        if drivers:
            assert "duplicated" == result.verdict
            assert drivers[0].startswith("both resumers drove the run: resumer-a ran ")
            assert "; resumer-b ran " in drivers[0]
        else:
            assert ("ok", 0) == (result.verdict, result.duplicates), result.findings
        assert [-9, 0, 0] == result.exit_codes
        repeats = repeated_in_ledger(result)
        assert (repeats, sum(repeats.values())) == (repeats_named(result), result.duplicates)
        assert 0 == result.bound


@pytest.mark.slow
class TestOtherModes:
    def test_async_resumes_from_whatever_landed(self, engine: Engine) -> None:
        """durability="async": the checkpoint writes lag behind the run, but a kill at any
        write still resumes to the baseline."""
        result = run_cell(engine, "research", "async", "after-checkpoint:10")
        assert ("ok", True, 10) == (
            result.verdict,
            result.expected,
            (result.store_at_crash or {}).get("checkpoints"),
        )

    def test_exit_loses_a_run_killed_mid_run(self, engine: Engine) -> None:
        """durability="exit" writes nothing before the graph exits: killed mid-run, the
        thread has no checkpoint (lost, as LangGraph documents)."""
        result = run_cell(engine, "research", "exit", "mid-model:2")
        assert ("lost", True, {"session": None, "checkpoints": 0}) == (
            result.verdict,
            result.expected,
            result.store_at_crash,
        )

    def test_exit_keeps_an_error_and_continues_it(self, engine: Engine) -> None:
        """A model error makes the graph exit: the exit write keeps the state and the
        failed task's error, and the continued run ends as the baseline does."""
        result = run_cell(engine, "research", "exit", "model-500:3")
        [run] = (result.store_at_crash or {}).get("runs", [{}])
        assert ("ERROR", 5, "ok") == (run.get("status"), run.get("messages"), result.verdict)

    def test_send_keeps_each_finished_call(self, engine: Engine) -> None:
        """sync-send: the batch of parallel-fetch's first turn is three Send tasks; killed
        once the first one's pending write landed, the resume runs only the calls without
        a durable result."""
        result = run_cell(engine, "parallel-fetch", "sync-send", "after-checkpoint:6")
        crash = (result.store_at_crash or {}).get("runs", [{}])[0]
        assert (1, "ok") == (crash.get("tool_executions"), result.verdict)
        assert result.duplicates <= result.bound <= 2


@pytest.mark.slow
class TestAsync:
    """durability="async" is declared `writes_lag`: its writes land behind the run, in an
    order that differs between runs, so no cell is judged on the count one baseline trace
    had at a point inside a step."""

    def test_a_point_inside_a_step_is_confirmed_from_what_landed(self, engine: Engine) -> None:
        """While the tool of batch 4 is parked, the event loop lands writes queued behind
        the run: the cell is confirmed from what the worker announced and the store holds
        (17 when the loop has drained; the baseline's trace had fewer there: the artefact
        `corrupt` cell this used to be), never from the baseline's count. A write that
        still lands between the confirmation and the kill is named in the timeline, and
        the cell is judged on the kill's reading."""
        result = run_cell(engine, "research", "async", "mid-batch:4:0")
        held = (result.store_at_crash or {}).get("checkpoints")
        [said] = [e.text for e in result.timeline if e.text.startswith("store holds")]
        later = [e.text for e in result.timeline if e.text.startswith("store held")]
        confirmed = int(said.split()[2])
        landed, begun = (int(said.split("worker: ")[1].split()[n]) for n in (0, 2))
        assert said.startswith(f"store holds {count(confirmed, 'checkpoint')} at mid-batch:4:0")
        assert landed <= confirmed <= begun
        if held == confirmed:
            assert [] == later
        else:
            assert held is not None
            assert [f"store held {count(held, 'checkpoint')} at the kill"] == [
                t.split(" (")[0] for t in later
            ]
            assert held is not None and held > confirmed
        assert ("ok", True) == (result.verdict, result.expected), result.detail
        assert [] == [f for f in result.findings if f["kind"] == "checkpoint-count"]

    def test_a_kill_mid_model_is_judged_on_what_the_store_held(self, engine: Engine) -> None:
        """The model's gate parks the event loop: how many writes had landed is a race
        (a write may have committed on aiosqlite's thread without its `landed` gate).
        Whatever the store held, it lies between what the worker announced landed and
        begun, and the resume reaches the baseline."""
        result = run_cell(engine, "research", "async", "mid-model:4")
        [said] = [e.text for e in result.timeline if e.text.startswith("store holds")]
        held = int(said.split()[2])
        landed, begun = (int(said.split("worker: ")[1].split()[n]) for n in (0, 2))
        assert landed <= held <= begun <= landed + 1
        assert ("ok", True) == (result.verdict, result.expected)
        assert result.duplicates <= result.bound

    def test_points_are_planned_from_both_baseline_traces(self, engine: Engine) -> None:
        """Both baseline runs' traces are kept; the planned points are those both offer,
        and the takeover points come from the store's count: every write but the last,
        the same from both traces however their writes interleave with the run."""
        base = engine.baseline(("langgraph", "research", "async", "sqlite"))
        other = base.other()
        assert other is not None and base.writes_lag
        planned = kinds.points_of(base, kinds.names())
        first = dataclasses.replace(base, other_trace=[])  # the first trace alone
        first.analyse()
        offered = [set(kinds.points_of(b, kinds.names())) for b in (first, other)]
        assert set(planned) == offered[0] & offered[1]
        sigstops = [p.k for p in planned if p.kind == "sigstop"]
        assert list(range(1, 21)) == sigstops
        # Where a checkpoint lands against a tool batch is what the lagging writes of async
        # place differently in each trace: the kinds placed by it (a second resumer after a
        # checkpoint that follows a batch; a batch with a durable checkpoint before it, for
        # the lease and the regenerated replies) are the only ones the traces may disagree
        # on. Kills at checkpoints, batches and the model never do.
        assert 21 == base.checkpoints
        placed_by_batches = {"second-resumer", "lease-outlived", *BEHAVIOURS}
        disagreed = {p.kind for p in kinds.one_trace_only(base)}
        assert disagreed <= placed_by_batches, base.trace_note

    def test_a_takeover_after_a_write_behind_the_run_meets_a_stale_worker(
        self, engine: Engine
    ) -> None:
        """sigstop:15 (offered now by the store's count: the trace has it after the last
        model turn): the woken worker lands its remaining writes as a second branch, as
        in `sync` (no run ownership in the open-source library)."""
        result = run_cell(engine, "research", "async", "sigstop:15")
        kinds_found = {f["kind"] for f in result.findings}
        assert ("corrupt", False) == (result.verdict, result.expected)
        assert "stale-write" in kinds_found and "checkpoint-count" not in kinds_found


@pytest.mark.slow
@pytest.mark.postgres
def test_cells_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    """LangGraph's PostgreSQL saver, a schema per cell: a kill after a pending write and
    a kill inside a write's pipeline both resume to the baseline."""
    engine = Engine(EngineConfig(store=pg_url, work_root=tmp_path / "work", keep="none"))
    results = [
        engine.run_cell(
            Cell("langgraph", "research", "sync", "postgresql", kinds.parse_schedule(p))
        )
        for p in ("after-checkpoint:12", "mid-commit:6")
    ]
    assert [("ok", 12, 0), ("ok", 5, 1)] == [
        (r.verdict, (r.store_at_crash or {}).get("checkpoints"), r.duplicates) for r in results
    ]
    assert_no_worker_alive(worker_pids(results))


def test_the_counter_rows_name_langgraphs_writes(tmp_path: Path, instrumented: list[str]) -> None:
    """Each landed write is one counter row naming what LangGraph wrote: the checkpoint,
    or the task whose pending writes it saved (evidence for the report's cells)."""
    url = f"sqlite:///{tmp_path / 'store.db'}"
    run_in_process(scenarios.get("research"), "sync", url, tmp_path)
    with sqlite3.connect(tmp_path / "store.db") as conn:
        rows = conn.execute("SELECT n, kind, task_id IS NULL FROM killpoint_checkpoints ORDER BY n")
        kinds = [(kind, no_task) for _, kind, no_task in rows.fetchall()]
        written = conn.execute("SELECT metadata FROM checkpoints ORDER BY checkpoint_id")
        sources = [json.loads(m)["source"] for (m,) in written.fetchall()]
    assert [("checkpoint", 1)] + [("writes", 0), ("checkpoint", 1)] * 10 == kinds
    assert ["input"] + ["loop"] * 10 == sources


class TestOlderSaverStore:
    def test_reads_a_store_written_before_task_path(self, tmp_path: Path) -> None:
        """A store an older SQLite saver wrote (its writes table without task_path, which
        the saver's own setup() adds) is read without migrating it: its pending writes come
        back and the table is left as it was."""
        from langgraph.checkpoint.base import empty_checkpoint
        from langgraph.checkpoint.sqlite import SqliteSaver

        from killpoint.adapters.langgraph.reading import Reader

        path = tmp_path / "store.db"
        conn = sqlite3.connect(path, check_same_thread=False)
        writer = SqliteSaver(conn)
        config = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
        saved = writer.put(config, empty_checkpoint(), {"source": "input", "step": -1}, {})
        writer.put_writes(saved, [("messages", "hello")], task_id="task-1")
        conn.execute("ALTER TABLE writes DROP COLUMN task_path")
        conn.commit()
        reader = Reader(f"sqlite:///{path}", conn, {"checkpoints", "writes"})
        found = reader.saver.get_tuple(saved)
        assert found is not None
        assert [(task, channel) for task, channel, _ in found.pending_writes] == [
            ("task-1", "messages")
        ]
        columns = {row[1] for row in conn.execute("PRAGMA table_info(writes)")}
        assert "task_path" not in columns
        conn.close()
