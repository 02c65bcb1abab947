# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Kills inside a batch follow the order the runtime starts its calls: a runtime that
runs them one at a time, last first, is killed at every mid-batch point, never left
hung on a gate held for a call it will only start later (real workers, real SQLite)."""

from __future__ import annotations

import pytest

from killpoint import kinds
from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig
from killpoint.kinds.kills import MidBatch
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
