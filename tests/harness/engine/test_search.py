"""Hypothesis searches crash schedules and shrinks a failing one to a minimal schedule."""

# ruff: noqa: SIM300
from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from killpoint import kinds
from killpoint.engine.cell_host import EngineConfig
from killpoint.engine.engine import Engine
from killpoint.engine.search import schedules, search
from killpoint.judge.baseline import Baseline
from killpoint.values.points import CrashPoint

pytestmark = pytest.mark.slow


def test_a_failing_runtime_shrinks_to_one_early_crash(tmp_path: Path) -> None:
    """Against a runtime whose resume re-runs finished batches, the search reports a
    failing schedule, shrunk to a single crash at the first boundary."""
    engine = Engine(EngineConfig(work_root=tmp_path, keep="none"))
    row = ("tests.harness.broken_runtimes:rerun_finished", "research", "tool-batch", "sqlite")
    found = search(engine, row, max_examples=10, seed=3)
    assert found.minimal is not None
    assert ["after-checkpoint:1"] == found.minimal.schedule
    assert not found.minimal.expected


def test_the_reference_runtime_has_no_failing_schedule(tmp_path: Path) -> None:
    """A handful of random schedules (up to two crashes) on the reference runtime all pass."""
    engine = Engine(EngineConfig(work_root=tmp_path, keep="none"))
    found = search(engine, ("reference", "research", "tool-batch", "sqlite"), max_examples=6)
    assert found.minimal is None
    assert len(found.tried) >= 3


BASE = Baseline(
    "reference",
    "research",
    "tool-batch",
    "sqlite",
    trace=[
        "run:1:start",
        "model:1:received",
        "checkpoint:1:writing",
        "checkpoint:1:committing",
        "checkpoint:1:landed",
        "model:2:received",
        "checkpoint:2:writing",
        "checkpoint:2:committing",
        "checkpoint:2:landed",
        "model:3:received",
        "checkpoint:3:writing",
        "checkpoint:3:committing",
        "checkpoint:3:landed",
    ],
)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_generated_schedules_only_crash_later_each_time(data: st.DataObject) -> None:
    """Every generated schedule's later crashes are at boundaries past what survived the
    crash before (a schedule the engine could not reach is never generated)."""
    schedule = data.draw(schedules(BASE, depth=3))
    held = kinds.plan(BASE, schedule[0]).checkpoints
    for point in schedule[1:]:
        assert "after-checkpoint" == point.kind
        assert point.k > held
        held = point.k
    assert isinstance(schedule[0], CrashPoint)
