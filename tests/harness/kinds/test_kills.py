# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Kills inside a batch follow the order the runtime starts its calls: a runtime that
runs them one at a time, last first, is killed at every mid-batch point, never left
hung on a gate held for a call it will only start later (real workers, real SQLite)."""

from __future__ import annotations

import pytest

from killpoint import kinds
from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig
from killpoint.judge.baseline import Baseline
from killpoint.kinds.kills import MidBatch, MidCommit
from killpoint.values.cell import Cell

pytestmark = pytest.mark.slow

REVERSE = "tests.harness.reverse_runtime:reverse"
ROW = (REVERSE, "parallel-fetch", "tool-batch", "sqlite")


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Engine:
    work = tmp_path_factory.mktemp("kills")
    return Engine(EngineConfig(work_root=work, keep="none", timeout=60))


def test_call_i_is_the_ith_to_start(engine: Engine) -> None:
    """The reverse runtime starts call 2 first: mid-batch:1:0 holds call 2 in flight
    and calls 1 and 0 before they start, and waits only for call 2's effect."""
    base = engine.baseline(ROW)
    assert base.problem is None, base.problem
    batch = base.batches[0]
    plan = MidBatch().plan(base, kinds.parse_point("mid-batch:1:0"))
    last, middle, first = batch.calls[2], batch.calls[1], batch.calls[0]
    assert (last.finished, middle.started, first.started) == plan.arm
    assert frozenset({last.finished}) == plan.wait_for
    plan = MidBatch().plan(base, kinds.parse_point("mid-batch:1:2"))
    assert (first.finished,) == plan.arm
    assert (last, middle) == plan.finished_first


def test_every_mid_batch_point_is_reached_and_expected(engine: Engine) -> None:
    """Before, 5 of these 6 cells were `hung` (held at a call the runtime starts only
    after the one in flight) or `corrupt` (the finished calls never ran)."""
    base = engine.baseline(ROW)
    results = [
        engine.run_cell(Cell(*ROW, schedule=(p,))) for p in kinds.points_of(base, ("mid-batch",))
    ]
    assert 6 == len(results)
    assert [] == [(r.id, r.verdict, r.detail) for r in results if not r.expected]
    assert set() == {r.verdict for r in results} & {"hung", "missed", "corrupt"}


def test_a_checkpoint_split_over_transactions_is_said_so_in_the_plan() -> None:
    """A checkpoint whose commit hook fired three times (three transactions) is killed
    before its last COMMIT, two already landed. The plan line said "inside checkpoint 2's
    transaction", as if there were one, and its gate's `#3` was explained nowhere."""
    trace = [
        "checkpoint:1:writing", "checkpoint:1:committing", "checkpoint:1:landed",
        "checkpoint:2:writing", "checkpoint:2:committing", "checkpoint:2:committing#2",
        "checkpoint:2:committing#3", "checkpoint:2:landed",
    ]  # fmt: skip
    base = Baseline("mine", "research", "per-batch", "sqlite", trace=trace)
    plan = MidCommit().plan(base, kinds.parse_point("mid-commit:2"))
    assert ("checkpoint:2:committing#3",) == plan.arm
    assert plan.detail == (
        "inside the last of checkpoint 2's 3 transactions, before its COMMIT: its first 2 "
        "transactions committed, after 1 checkpoint landed; the worker is killed (gate "
        "checkpoint:2:committing#3: its pass 3 in the process)"
    )
    one = MidCommit().plan(base, kinds.parse_point("mid-commit:1"))
    assert "" == one.detail  # one transaction: the kind's own words say it
