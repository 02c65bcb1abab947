"""Google ADK (the optional extra `killpoint[adk]`) under test, unmodified.

The adapter's declarations; ADK's events in the normal form (failure records apart from
the conversation); a scenario tool as an ADK user writes one; a real run in this process
with every write gated, committed and counted; `check-adapter`; a matrix slice of real
kills on real SQLite files without a `missed`, `hung` or `error` cell; the three findings
ADK's design makes (an ended invocation run again, a takeover refused as the later writer,
a model error kept in history); and cells on PostgreSQL. Skipped, with the reason, only
when ADK cannot be imported, and failed instead when `KILLPOINT_REQUIRE_ADK` is set.
"""

# ruff: noqa: SIM300
from __future__ import annotations

import asyncio
import inspect
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from killpoint.adapters import adk as adk_adapter

PROBLEM = adk_adapter.import_problem()
REQUIRE_ENV = "KILLPOINT_REQUIRE_ADK"
if PROBLEM is not None and os.environ.get(REQUIRE_ENV):
    pytest.fail(
        f"google-adk is required ({REQUIRE_ENV} is set) but cannot be imported ({PROBLEM}); "
        "pip install 'killpoint[adk]'",
        pytrace=False,
    )
if PROBLEM is not None:
    pytest.skip(
        f"google-adk is not installed ({PROBLEM}); pip install 'killpoint[adk]'",
        allow_module_level=True,
    )

from google.adk.sessions.database_session_service import DatabaseSessionService  # noqa: E402

from killpoint import kinds, scenarios  # noqa: E402
from killpoint.adapters.adk import MODES, AdkAdapter, writes  # noqa: E402
from killpoint.adapters.adk.agent import AdkDriver, adk_tool, async_url  # noqa: E402
from killpoint.adapters.adk.normal import run_of  # noqa: E402
from killpoint.adapters.checkpoint_gates import CheckpointGates  # noqa: E402
from killpoint.adapters.protocol import local_model  # noqa: E402
from killpoint.adapters.registry import load_adapter  # noqa: E402
from killpoint.engine.engine import Engine  # noqa: E402
from killpoint.engine.options import EngineConfig  # noqa: E402
from killpoint.scenarios import Ledger, RunResult, ScriptedModel, ToolEnv, drive, gates  # noqa: E402
from killpoint.scenarios.model_server import serve  # noqa: E402
from killpoint.values.cell import Cell, CellResult  # noqa: E402
from killpoint.values.modes import runnable  # noqa: E402
from killpoint.values.normal_form import validate_session  # noqa: E402
from tests.harness.live_workers import assert_no_worker_alive, worker_pids  # noqa: E402

REPO = Path(__file__).resolve().parents[3]


def model_event(*calls: tuple[str, str, dict[str, Any]], text: str | None = None) -> dict[str, Any]:
    parts: list[dict[str, Any]] = [
        {"function_call": {"id": i, "name": n, "args": a}} for i, n, a in calls
    ]
    if text is not None:
        parts.append({"text": text})
    usage = {"prompt_token_count": 10, "candidates_token_count": 2}
    return {
        "author": "agent",
        "content": {"role": "model", "parts": parts},
        "usage_metadata": usage,
    }


def responses(*answers: tuple[str, str, Any]) -> dict[str, Any]:
    parts = [{"function_response": {"id": i, "name": n, "response": r}} for i, n, r in answers]
    return {"author": "agent", "content": {"role": "user", "parts": parts}}


USER = {"author": "user", "content": {"role": "user", "parts": [{"text": "Go."}]}}
END = {"author": "agent", "actions": {"end_of_agent": True}}


class TestAdapter:
    def test_registered_with_one_mode_and_the_scripted_model_at_a_local_address(self) -> None:
        """`--runtime adk`: one runnable mode, the two ADK does not offer declared with
        ADK's reason, no kind declined, and LiteLLM served at a local address."""
        adapter = load_adapter("adk")
        assert isinstance(adapter, AdkAdapter)
        assert ("events",) == runnable(MODES)
        unavailable = {m.name: m.unavailable for m in adapter.modes if m.unavailable}
        assert "one event, appended after the last" in unavailable["per-call"]
        assert "appends every event as it happens" in unavailable["at-end"]
        assert {} == dict(adapter.declined_kinds)
        assert local_model(adapter)

    def test_a_missing_library_names_the_extra(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(adk_adapter, "import_problem", lambda: "No module named 'google.adk'")
        with pytest.raises(ValueError, match=r"pip install killpoint\[adk\]"):
            load_adapter("adk")

    def test_confirmations_are_declined_with_the_reason(self) -> None:
        adapter = AdkAdapter()
        assert "adk_request_confirmation" in (
            adapter.unsupported(scenarios.get("confirm"), "events") or ""
        )
        assert None is adapter.unsupported(scenarios.get("reserve"), "events")

    def test_an_unknown_mode_and_another_store_kind_are_refused(self, tmp_path: Path) -> None:
        ledger = Ledger(tmp_path / "ledger", "research")
        with pytest.raises(ValueError, match="the one mode is 'events'"):
            AdkAdapter().driver(
                scenarios.get("research"), "sqlite://", "per-call", ledger, lease_seconds=1
            )
        with pytest.raises(ValueError, match=r"'mysql'.*--store sqlite or --store postgresql"):
            AdkDriver(scenarios.get("research"), "mysql://u@localhost/db", ledger)

    def test_store_urls_get_an_asyncio_driver_and_keep_their_query(self) -> None:
        assert "sqlite+aiosqlite:////w/store.db?timeout=0.1" == async_url(
            "sqlite:////w/store.db?timeout=0.1"
        )
        pg = "postgresql+psycopg://kp:secret@127.0.0.1:5432/db?options=-csearch_path%3Dkp_abc"
        assert pg == async_url(pg.replace("+psycopg", ""))

    def test_an_empty_store_reads_as_nothing(self, tmp_path: Path) -> None:
        url = f"sqlite:///{tmp_path}/absent.db"
        adapter = AdkAdapter()
        assert None is adapter.read_session(url, "s")
        assert 0 == adapter.progress(url, "s")
        assert [] == list(adapter.inspect(url, "s"))
        assert not (tmp_path / "absent.db").exists()


class TestNormalForm:
    def test_an_invocation_is_a_run_and_its_responses_are_tool_executions(self) -> None:
        events = [
            USER,
            model_event(("c1", "search", {"q": "x"}), ("c2", "fetch", {"id": 1})),
            responses(("c2", "fetch", {"result": "page"}), ("c1", "search", {"result": "hits"})),
            model_event(text="done"),
            END,
        ]
        run = run_of(events)
        validate_session({"state": {}, "runs": {"r": run}})
        assert ("COMPLETED", "done", []) == (run["status"], run["content"], run["failures"])
        assert ["user", "assistant", "tool", "tool", "assistant"] == [
            m["role"] for m in run["messages"]
        ]
        assert [("fetch", 1, 1), ("search", 1, 0)] == [
            (e["name"], e["turn"], e["call_index"]) for e in run["tool_executions"]
        ]
        assert {"model_calls": 2, "input_tokens": 20, "output_tokens": 4} == run["usage"]

    def test_error_and_abort_events_are_failures_not_messages(self) -> None:
        """A model error ADK stored leaves the run ERROR until the resume answers; an abort
        seal (its synthetic responses included) makes it CANCELLED; neither is a message."""
        error = {"author": "agent", "error_code": "InternalServerError", "error_message": "500"}
        failed = run_of([USER, model_event(("c1", "f", {})), responses(("c1", "f", "ok")), error])
        assert ("ERROR", ["error"], 3) == (
            failed["status"],
            [f["kind"] for f in failed["failures"]],
            len(failed["messages"]),
        )
        resumed = run_of(
            [
                USER,
                model_event(("c1", "f", {})),
                responses(("c1", "f", "ok")),
                error,
                model_event(text="fine"),
            ]
        )
        assert ("COMPLETED", 4) == (resumed["status"], len(resumed["messages"]))
        seal = {**responses(("c2", "f", {"error": "aborted"})), "error_code": "INVOCATION_ABORTED"}
        aborted = run_of([USER, model_event(("c2", "f", {})), seal])
        assert "CANCELLED" == aborted["status"]
        assert [
            {
                "kind": "abort",
                "code": "INVOCATION_ABORTED",
                "message": None,
                "at_message": 2,
                "sealed_calls": ["f"],
            }
        ] == aborted["failures"]
        assert [] == aborted["tool_executions"]


def test_a_tool_is_written_as_an_adk_user_writes_one(tmp_path: Path) -> None:
    """The parameters ADK fills itself are hidden from the model and filled from
    ADK's tool_context: the idempotency key from the invocation and the call id."""
    tools = scenarios.get("side-effects-idempotent").build_tools(
        ToolEnv(Ledger(tmp_path / "l", "x"))
    )
    keyed = next(t for t in tools if "idempotency_key" in inspect.signature(t).parameters)
    wrapped = adk_tool(keyed)
    params = inspect.signature(wrapped).parameters
    assert "idempotency_key" not in params and "tool_context" in params
    assert wrapped.__name__ == keyed.__name__ and wrapped.__doc__ == keyed.__doc__

    class Context:
        invocation_id, function_call_id = "run1", "call_7"

    args = {p: "x" if p != "amount_cents" else 5 for p in params if p != "tool_context"}
    wrapped(**args, tool_context=Context())
    entries = [json.loads(line) for line in (tmp_path / "l").read_text().splitlines()]
    assert "run1/call_7" == entries[0]["key"]


@pytest.fixture
def instrumented(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """This process instrumented as a worker is (writes.instrument), every gate traced;
    ADK's append_event is restored afterwards."""
    monkeypatch.setattr(DatabaseSessionService, "append_event", DatabaseSessionService.append_event)
    trace: list[str] = []
    writes.instrument(CheckpointGates())
    gates.configure((), announce=None, tracer=trace.append)
    yield trace
    gates.disarm()


@pytest.mark.slow
def test_a_run_in_the_normal_form_and_every_write_counted(
    tmp_path: Path, instrumented: list[str]
) -> None:
    """research: the user's message, five model replies, four batches of responses and
    end_of_agent: 11 events, each passing writing, committing (SQLAlchemy's commit event,
    in the greenlet of the task that opened it) and landed once, in order, and counted."""
    scenario = scenarios.get("research")
    url = f"sqlite:///{tmp_path}/store.db"
    model = ScriptedModel(scenario.script, tmp_path / "model")

    async def go() -> list[RunResult]:
        driver = AdkDriver(scenario, url, Ledger(tmp_path / "ledger", "research"))
        try:
            with model:
                return await drive(scenario, driver, model, session_id="s")
        finally:
            await driver.close()

    with serve(model):
        results = asyncio.run(go())
    assert ["COMPLETED"] == [r.status for r in results]
    adapter = AdkAdapter()
    session: Any = adapter.read_session(url, "s")
    validate_session(session)
    run = session["runs"]["s-run1"]
    assert (scenario.expected[0].content, "COMPLETED") == (run["content"], run["status"])
    assert ["search", "fetch_detail", "fetch_detail", "fetch_detail"] == [
        e["name"] for e in run["tool_executions"]
    ]
    for phase in ("writing", "committing", "landed"):
        numbers = [
            g.number
            for e in instrumented
            if (g := gates.parse(e)) and g.kind == "checkpoint" and g.phase == phase
        ]
        assert list(range(1, 12)) == numbers, phase
    assert 11 == adapter.progress(url, "s")
    assert [] == list(adapter.inspect(url, "s"))


def killpoint(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=1200,
    )


@pytest.mark.slow
def test_check_adapter_passes(tmp_path: Path) -> None:
    """Every check of `killpoint check-adapter`, on a scenario with parallel batches."""
    result = killpoint(
        "check-adapter",
        "--runtime",
        "adk",
        "--scenario",
        "parallel-fetch",
        "--work-dir",
        str(tmp_path),
    )
    assert 0 == result.returncode, result.stdout + result.stderr
    assert "every check passed" in result.stdout


@pytest.mark.slow
def test_a_matrix_slice_has_no_missed_hung_or_error_cell(tmp_path: Path) -> None:
    """Every boundary, mid-batch and mid-model point of research and a model fault at each
    turn: real workers killed, fresh ones resuming ADK invocations from the SQLite file;
    every cell ok (a model error kept in history is a `failures-differ`, never the verdict)."""
    report = tmp_path / "slice.json"
    result = killpoint(
        "matrix", "--runtime", "adk", "--scenarios", "research",
        "--points", "after-checkpoint,mid-batch,mid-model,model-500",
        "--workers", "2", "--seed", "31", "--work-dir", str(tmp_path),
        "--json", str(report), "--report", str(tmp_path / "slice.html"),
    )  # fmt: skip
    data = json.loads(report.read_text())
    cells = data["cells"]
    assert cells, result.stdout + result.stderr
    assert [] == [
        c["id"] for c in cells if c["verdict"] in ("missed", "error", "hung", "adapter-error")
    ]
    assert {"ok"} == {c["verdict"] for c in cells}, [
        c["detail"] for c in cells if c["verdict"] != "ok"
    ]
    faults = [c for c in cells if c["schedule"][0].startswith("model-500")]
    assert faults and all(
        "failures-differ" in {f["kind"] for f in c["findings"]} for c in faults
    ), [c["findings"] for c in faults]
    assert 0 == result.returncode, result.stdout


def cell(tmp_path: Path, where: str, store: str = "sqlite", url: str | None = None) -> CellResult:
    scenario, schedule = where.split("/")
    options = {"store": url} if url else {}
    engine = Engine(EngineConfig(work_root=tmp_path / "work", keep="none", **options))
    return engine.run_cell(Cell("adk", scenario, "events", store, kinds.parse_schedule(schedule)))


@pytest.mark.slow
def test_adks_own_findings(tmp_path: Path) -> None:
    """What ADK's design makes of three points: continuing a COMPLETED invocation asks the
    model again (`ended-run-continued`); a paused worker woken before a takeover's first
    write wins and the takeover is refused (`takeover-refused`, never `stale-write`); the
    last write after the final answer leaves nothing to take over (ok, not `missed`)."""
    ended = cell(tmp_path / "a", "research/continue-ended:1")
    assert "ended-run-continued" in {f["kind"] for f in ended.findings}, ended.findings
    refused = cell(tmp_path / "b", "research/sigstop-writing:3")
    assert ("unresumable", False) == (refused.verdict, refused.expected), refused.findings
    assert "StaleSessionError" in refused.detail and "two drivers" in refused.detail
    assert "stale-write" not in {f["kind"] for f in refused.findings}
    final = cell(tmp_path / "c", "research/sigstop-writing:11")
    assert ("ok", True) == (final.verdict, final.expected), final.findings
    assert_no_worker_alive(worker_pids([ended, refused, final]))


@pytest.mark.slow
@pytest.mark.postgres
def test_cells_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    """DatabaseSessionService on PostgreSQL (psycopg 3 in its asyncio mode) in each cell's
    own schema: every write counted, and a kill after a batch and one inside a commit
    resume to the baseline."""
    engine = Engine(EngineConfig(store=pg_url, work_root=tmp_path / "work", keep="none"))
    base = engine.baseline(("adk", "research", "events", "postgresql"))
    assert (None, 11) == (base.problem, base.checkpoints)
    results = [
        engine.run_cell(Cell("adk", "research", "events", "postgresql", kinds.parse_schedule(p)))
        for p in ("after-checkpoint:3", "mid-commit:5")
    ]
    assert [("ok", 3), ("ok", 4)] == [
        (r.verdict, (r.store_at_crash or {}).get("checkpoints")) for r in results
    ], [r.detail for r in results]
    assert_no_worker_alive(worker_pids(results))
