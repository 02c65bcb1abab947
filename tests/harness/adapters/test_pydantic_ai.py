"""pydantic-ai made durable by DBOS (the optional extra `killpoint[pydantic-ai]`) under test,
unmodified.

The adapter's declarations; a run in the normal form read back from DBOS's SQLite system
database; the count of landed writes (`progress`) against the gates a real run passes;
`check-adapter` for every runnable mode; and a small matrix slice with real kills and
real SQLite files, which must end without a `missed` or `error` cell. Skipped, with the
reason, only when pydantic-ai or DBOS cannot be imported, and failed instead when
`KILLPOINT_REQUIRE_PYDANTIC_AI` is set (CI, whose `make test` installs the extra).
"""

# ruff: noqa: SIM300
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from killpoint.adapters import pydantic_ai as pydantic_ai_adapter

PROBLEM = pydantic_ai_adapter.import_problem()
REQUIRE_ENV = "KILLPOINT_REQUIRE_PYDANTIC_AI"
if PROBLEM is not None and os.environ.get(REQUIRE_ENV):
    pytest.fail(
        f"pydantic-ai with DBOS is required ({REQUIRE_ENV} is set) but cannot be imported "
        f"({PROBLEM}); pip install 'killpoint[pydantic-ai]'",
        pytrace=False,
    )
if PROBLEM is not None:
    pytest.skip(
        f"pydantic-ai or DBOS is not installed ({PROBLEM}); pip install 'killpoint[pydantic-ai]'",
        allow_module_level=True,
    )

import sqlalchemy  # noqa: E402
from dbos._sys_db import SystemDatabase  # noqa: E402

from killpoint import kinds, scenarios  # noqa: E402
from killpoint.adapters.checkpoint_gates import CheckpointGates  # noqa: E402
from killpoint.adapters.pydantic_ai import MODES, PydanticAIAdapter, writes  # noqa: E402
from killpoint.adapters.pydantic_ai.agent import (  # noqa: E402
    shutdown,
    system_database_url,
    system_schema,
)
from killpoint.adapters.registry import load_adapter  # noqa: E402
from killpoint.engine.campaign import Campaign, CampaignConfig  # noqa: E402
from killpoint.engine.engine import Engine  # noqa: E402
from killpoint.engine.options import EngineConfig  # noqa: E402
from killpoint.scenarios import Ledger, RunResult, ScriptedModel, drive, gates  # noqa: E402
from killpoint.values.cell import Cell  # noqa: E402
from killpoint.values.modes import runnable  # noqa: E402
from killpoint.values.normal_form import validate_session  # noqa: E402
from tests.harness.live_workers import assert_no_worker_alive, worker_pids  # noqa: E402

REPO = Path(__file__).resolve().parents[3]
RUNNABLE = runnable(MODES)


@pytest.fixture
def instrumented(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """This process instrumented as a worker is (writes.instrument), every gate traced; DBOS's
    classes and SQLAlchemy's listeners are restored, and DBOS destroyed, afterwards."""
    for method in writes.WRITES:
        monkeypatch.setattr(SystemDatabase, method, getattr(SystemDatabase, method))
    trace: list[str] = []
    checkpoints = CheckpointGates()
    writes.instrument(checkpoints)
    gates.configure((), announce=None, tracer=trace.append)
    yield trace
    gates.disarm()
    shutdown()
    # The commit hook stays: without an open checkpoint it hits no gate.
    sqlalchemy.event.remove(sqlalchemy.Engine, "after_cursor_execute", writes._count)


def run_in_process(
    name: str, mode: str, work: Path
) -> tuple[list[RunResult], PydanticAIAdapter, str]:
    scenario = scenarios.get(name)
    adapter = PydanticAIAdapter()
    url = f"sqlite:///{work}/store.db"
    driver = adapter.driver(scenario, url, mode, Ledger(work / "ledger", name), lease_seconds=5)

    async def go() -> list[RunResult]:
        try:
            with ScriptedModel(scenario.script, work / "model", faults=scenario.faults) as model:
                return await drive(scenario, driver, model, session_id="s")
        finally:
            await driver.aclose()

    return asyncio.run(go()), adapter, url


def landed(trace: list[str]) -> list[int]:
    return [g.number for e in trace if (g := gates.parse(e)) and g.phase == "landed" and g.number]


class TestAdapter:
    def test_registered_with_its_modes(self) -> None:
        """`--runtime pydantic-ai` loads the adapter with its three modes, all runnable;
        `model-steps` persists mid-run (its replies) and no tool result."""
        adapter = load_adapter("pydantic-ai")
        assert isinstance(adapter, PydanticAIAdapter)
        assert ("steps", "steps-sequential", "model-steps") == RUNNABLE
        model_steps = next(m for m in adapter.modes if m.name == "model-steps")
        assert (True, False, False) == (
            model_steps.persists_mid_run,
            model_steps.tool_results_durable,
            model_steps.results_per_call,
        )
        assert "lock-held" in adapter.declined_kinds

    def test_a_missing_library_names_the_extra(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(pydantic_ai_adapter, "import_problem", lambda: "No module named 'dbos'")
        with pytest.raises(ValueError, match=r"pip install killpoint\[pydantic-ai\]"):
            load_adapter("pydantic-ai")

    def test_unsupported_scenarios_are_skipped_with_the_reason(self, tmp_path: Path) -> None:
        """Confirmations, an ERROR continued, and session state are declined, every mode,
        each with its reason; research runs."""
        config = CampaignConfig(
            runtime="pydantic-ai",
            scenarios=("confirm", "flaky-model", "session-state", "research"),
            work_root=tmp_path,
        )
        rows, skipped = Campaign(config).rows()
        assert [("pydantic-ai", "research", m, "sqlite") for m in RUNNABLE] == rows
        reasons = {s.scenario: s.reason for s in skipped}
        assert "second DBOS workflow" in reasons["confirm"]
        assert "ERROR is terminal" in reasons["flaky-model"]
        assert "no session state" in reasons["session-state"]

    def test_an_unknown_mode_name_is_refused(self, tmp_path: Path) -> None:
        ledger = Ledger(tmp_path / "ledger", "research")
        with pytest.raises(ValueError, match="choose from steps, steps-sequential, model-steps"):
            PydanticAIAdapter().driver(
                scenarios.get("research"), "sqlite://", "tool-batch", ledger, lease_seconds=1
            )

    def test_another_store_kind_is_refused_with_the_fix(self, tmp_path: Path) -> None:
        ledger = Ledger(tmp_path / "ledger", "research")
        with pytest.raises(ValueError, match=r"'mysql'.*--store sqlite or a postgresql"):
            PydanticAIAdapter().driver(
                scenarios.get("research"),
                "mysql://u@localhost/db",
                "steps",
                ledger,
                lease_seconds=1,
            )

    def test_a_postgresql_store_keeps_dbos_in_the_cells_schema(self) -> None:
        url = "postgresql+psycopg://kp:secret@127.0.0.1:5432/db?options=-csearch_path%3Dkp_abc"
        assert "kp_abc" == system_schema(url)
        assert system_database_url(url).startswith("postgresql+psycopg://kp:secret@")
        assert None is system_schema("sqlite:///x.db")

    def test_an_empty_store_reads_as_nothing(self, tmp_path: Path) -> None:
        url = f"sqlite:///{tmp_path}/absent.db"
        adapter = PydanticAIAdapter()
        assert None is adapter.read_session(url, "s")
        assert 0 == adapter.progress(url, "s")
        assert [] == list(adapter.inspect(url, "s"))
        assert not (tmp_path / "absent.db").exists()


@pytest.mark.slow
def test_a_run_in_the_normal_form_and_every_write_counted(
    tmp_path: Path, instrumented: list[str]
) -> None:
    """research in `steps`: one status row, five model steps, four tool steps and the
    outcome: 11 writes, each passing its gates once, in order, and counted in the store."""
    results, adapter, url = run_in_process("research", "steps", tmp_path)
    assert ["COMPLETED"] == [r.status for r in results]
    session: dict[str, Any] | None = adapter.read_session(url, "s")  # type: ignore[assignment]
    assert session is not None
    validate_session(session)
    run = session["runs"]["s-run1"]
    assert "COMPLETED" == run["status"]
    assert scenarios.get("research").expected[0].content == run["content"]
    assert ["user", "assistant", "tool"] == [m["role"] for m in run["messages"][:3]]
    assert ["search", "fetch_detail", "fetch_detail", "fetch_detail"] == [
        e["name"] for e in run["tool_executions"]
    ]
    assert list(range(1, 12)) == landed(instrumented)
    committing = [
        g.number for e in instrumented if (g := gates.parse(e)) and g.phase == "committing"
    ]
    assert list(range(1, 12)) == committing
    assert 11 == adapter.progress(url, "s")
    assert [] == list(adapter.inspect(url, "s"))


def killpoint(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", *args],
        capture_output=True,
        text=True,
        cwd=REPO,
        timeout=900,
    )


@pytest.mark.slow
@pytest.mark.parametrize("mode", RUNNABLE)
def test_check_adapter_passes(mode: str, tmp_path: Path) -> None:
    """Every check of `killpoint check-adapter`, on a scenario with a parallel batch."""
    result = killpoint(
        "check-adapter",
        "--runtime",
        "pydantic-ai",
        "--mode",
        mode,
        "--scenario",
        "parallel-fetch",
        "--work-dir",
        str(tmp_path),
    )
    assert 0 == result.returncode, result.stdout + result.stderr
    assert "every check passed" in result.stdout


@pytest.mark.slow
def test_a_matrix_slice_has_no_missed_or_error_cell(tmp_path: Path) -> None:
    """Every boundary of research and side-effects, in both modes: real workers killed at
    each of DBOS's writes, recovered by a DBOS launch in a fresh process; every point is
    reached and no cell is the harness's or the adapter's error."""
    report = tmp_path / "slice.json"
    result = killpoint(
        "matrix",
        "--runtime",
        "pydantic-ai",
        "--scenarios",
        "research,side-effects",
        "--points",
        "boundaries",
        "--workers",
        "2",
        "--seed",
        "31",
        "--work-dir",
        str(tmp_path),
        "--json",
        str(report),
        "--report",
        str(tmp_path / "slice.html"),
    )
    data = json.loads(report.read_text())
    verdicts = [c["verdict"] for c in data["cells"]]
    assert verdicts, result.stdout + result.stderr
    assert {m for _, m in {(c["scenario"], c["mode"]) for c in data["cells"]}} == set(RUNNABLE)
    assert [] == [c["id"] for c in data["cells"] if c["verdict"] in ("missed", "error", "hung")]
    assert [] == [c["id"] for c in data["cells"] if c["verdict"] == "adapter-error"]
    assert 0 == result.returncode, result.stdout


@pytest.mark.slow
def test_a_woken_stale_worker_starting_the_next_run_writes_nothing(tmp_path: Path) -> None:
    """multi-run, paused after DBOS's first write: another worker recovers run 1 and runs
    the session to its end; the woken worker gets run 1's recorded outcome and starts runs
    2 and 3 under ids that exist, which DBOS answers with their recorded outcomes and
    without a write (the store's count of landed writes does not move)."""
    engine = Engine(EngineConfig(work_root=tmp_path, keep="all"))
    result = engine.run_cell(
        Cell("pydantic-ai", "multi-run", "steps", "sqlite", kinds.parse_schedule("sigstop:1"))
    )
    assert_no_worker_alive(worker_pids([result]))
    assert ("ok", True) == (result.verdict, result.expected), result.detail


@pytest.mark.slow
def test_in_model_steps_a_woken_owner_runs_its_next_tools_again(tmp_path: Path) -> None:
    """model-steps, paused after the second model reply was recorded: the takeover replays
    both replies and runs the batch they asked for; the woken owner goes on with its
    workflow code and runs the same calls once more before its next step record is
    refused, which no crash allows (DBOS has no lease; in `steps` each tool step would
    find the takeover's record and not run). Its findings name both processes."""
    engine = Engine(EngineConfig(work_root=tmp_path, keep="none"))
    result = engine.run_cell(
        Cell("pydantic-ai", "research", "model-steps", "sqlite", kinds.parse_schedule("sigstop:2"))
    )
    assert_no_worker_alive(worker_pids([result]))
    assert ("duplicated", False) == (result.verdict, result.expected), result.detail
    dup = [f for f in result.findings if f["kind"] == "effect-duplicated"]
    assert {"fetch_detail"} == {f["tool"] for f in dup}
    pids = {line.split("pid ")[1].split()[0] for f in dup for line in f["evidence"]}
    assert 2 == len(pids), [f["evidence"] for f in dup]
    # The search the owner had run before the pause repeats once, within the bound.
    assert any(f["kind"] == "effect-repeated" and f["tool"] == "search" for f in result.findings)


@pytest.mark.slow
@pytest.mark.postgres
def test_cells_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    """DBOS's PostgreSQL system database, in each cell's own schema: a kill after the
    first tool step, a kill inside a step's commit and a kill before the outcome (which DBOS
    writes in one autocommit statement, counted by its status) all resume to the
    baseline, and every write of the baseline is counted."""
    engine = Engine(EngineConfig(store=pg_url, work_root=tmp_path / "work", keep="none"))
    base = engine.baseline(("pydantic-ai", "research", "steps", "postgresql"))
    assert (None, 11) == (base.problem, base.checkpoints)
    results = [
        engine.run_cell(
            Cell("pydantic-ai", "research", "steps", "postgresql", kinds.parse_schedule(p))
        )
        for p in ("after-checkpoint:3", "mid-commit:3", "after-checkpoint:10")
    ]
    assert [("ok", 3), ("ok", 2), ("ok", 10)] == [
        (r.verdict, (r.store_at_crash or {}).get("checkpoints")) for r in results
    ]
    assert_no_worker_alive(worker_pids(results))


@pytest.mark.slow
@pytest.mark.postgres
def test_check_adapter_passes_on_postgresql(tmp_path: Path, pg_url: str) -> None:
    """check-adapter's progress check holds the count of landed writes (the outcome's by
    its status) to the gates a real run passes on PostgreSQL."""
    result = killpoint(
        "check-adapter",
        "--runtime",
        "pydantic-ai",
        "--scenario",
        "parallel-fetch",
        "--store",
        pg_url,
        "--work-dir",
        str(tmp_path),
    )
    assert 0 == result.returncode, result.stdout + result.stderr
    assert "PASS  progress          11 checkpoints, as the gates say" in result.stdout


@pytest.mark.slow
def test_a_commit_that_holds_the_file_lock_is_killed_then_read(tmp_path: Path) -> None:
    """large-output's sixth write spills its pages to the file before COMMIT, so the worker
    held inside that commit holds SQLite's EXCLUSIVE lock and no read can happen (the
    system database keeps a rollback journal). The engine kills it first and reads what
    the kill leaves: the cell is judged, not charged to the adapter."""
    engine = Engine(EngineConfig(work_root=tmp_path, keep="none"))
    result = engine.run_cell(
        Cell("pydantic-ai", "large-output", "steps", "sqlite", kinds.parse_schedule("mid-commit:6"))
    )
    assert ("ok", 5) == (result.verdict, (result.store_at_crash or {}).get("checkpoints"))
    assert any("inside its commit: killed first" in str(e) for e in result.timeline)
    assert_no_worker_alive(worker_pids([result]))
