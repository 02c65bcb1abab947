"""The matrix plan on the wire: what the session's owner ships to pytest-xdist workers
arrives whole (cells, rows, the error, baselines with their effects and batches), and a
cell whose worker died still gets a verdict."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
from collections import Counter

from killpoint import kinds
from killpoint.engine.matrix_plan import MatrixPlan, baseline_to_wire, lost_cell
from killpoint.judge.baseline import Baseline
from killpoint.scenarios import gates

ARGS = '{"q":"crash"}'
STARTED = gates.tool_gate("search", ARGS, "started")
CELL = "reference/research/tool-batch/sqlite/after-checkpoint:1"


def a_baseline() -> Baseline:
    """One run, one tool batch of one call, two checkpoints."""
    call = {"name": "search", "arguments": ARGS}
    base = Baseline(
        "reference",
        "research",
        "tool-batch",
        "sqlite",
        session={"runs": {"r1": {"messages": [{"role": "assistant", "tool_calls": [call]}]}}},
        effects=Counter({("search", ARGS): 1}),
        trace=[
            "run:1:start",
            "model:1:received",
            STARTED,
            STARTED.replace(":started", ":finished"),
            "checkpoint:1:landed",
            "model:2:received",
            "checkpoint:2:landed",
        ],
        results=[{"output": "done"}],
        seconds=0.25,
        tables=("kp_runs", "kp_sessions"),
    )
    base.analyse()
    return base


def test_a_plan_survives_the_wire() -> None:
    base = a_baseline()
    plan = MatrixPlan(
        cells=[CELL],
        broken=[("reference/research/runs/sqlite", "boom")],
        skipped=[("reference/research/tool/sqlite", "not offered")],
        error="RuntimeError: no store",
        baselines=[base],
    )

    back = MatrixPlan.from_wire(plan.to_wire())

    assert [CELL] == back.cells
    assert [("reference/research/runs/sqlite", "boom")] == back.broken  # tuples again
    assert [("reference/research/tool/sqlite", "not offered")] == back.skipped
    assert "RuntimeError: no store" == back.error
    assert [base] == back.baselines
    assert Counter({("search", ARGS): 1}) == back.baselines[0].effects
    assert 1 == len(back.baselines[0].batches)
    assert STARTED == back.baselines[0].batches[0].calls[0].started


def test_only_the_planning_process_keeps_the_campaign_and_skipped_rows() -> None:
    back = MatrixPlan.from_wire(MatrixPlan(cells=[CELL]).to_wire())

    assert None is back.campaign
    assert [] == back.skipped_rows
    assert [] == back.baselines


def test_a_baseline_travels_without_its_batches_and_with_effects_as_triples() -> None:
    data = json.loads(json.dumps(baseline_to_wire(a_baseline())))

    assert "batches" not in data  # rebuilt from the trace on arrival
    assert [["search", ARGS, 1]] == data["effects"]
    assert "checkpoint:2:landed" == data["trace"][-1]


def test_a_cell_whose_worker_died_is_missed_and_unexpected() -> None:
    lost = lost_cell(CELL, "node down: Not properly terminated")

    assert lost is not None
    assert CELL == lost.id
    assert ("missed", False) == (lost.verdict, lost.expected)
    assert ["after-checkpoint:1"] == lost.schedule
    assert "the pytest worker running this cell died: node down: Not properly terminated" == (
        lost.detail
    )
    assert kinds.parse_cell(CELL).replay_command() == lost.replay


def test_a_node_id_that_is_no_cell_gives_no_verdict() -> None:
    assert None is lost_cell("test_other.py::test_x", "crashed")
    assert None is lost_cell("reference/research/tool-batch/sqlite/nowhere:1", "crashed")


def test_a_row_on_a_store_the_adapter_does_not_declare_is_skipped_with_the_reason(
    pg_url: str,
) -> None:
    """The pytest plugin collects the plan: the row is a skipped item naming the store and
    the stores the adapter supports, and nothing of it runs (its driver would raise)."""
    from killpoint.engine.campaign import CampaignConfig
    from killpoint.engine.matrix_plan import make_plan

    runtime = "tests.harness.declining_runtimes:sqlite_only"
    config = CampaignConfig.from_options(
        runtime=runtime, scenarios="research", modes="tool-batch", points="boundaries",
        store=pg_url, workers=1,
    )  # fmt: skip
    plan = make_plan(config)
    reason = (
        f"runtime {runtime!r} does not run on a postgresql store: its adapter supports "
        "sqlite only (its `stores`)"
    )
    assert [(f"{runtime}/research/tool-batch/postgresql", reason)] == plan.skipped
    assert [] == plan.cells
    assert [] == plan.baselines
    assert [] == plan.broken
