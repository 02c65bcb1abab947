"""One traced worker per row: the copies it takes at each point, and cells resumed from
them judged as cells whose own worker was killed there (`--kills fast` against `real`)."""

# ruff: noqa: SIM300
from __future__ import annotations

from pathlib import Path

import pytest

from killpoint.adapters.registry import load_adapter
from killpoint.engine.campaign import Campaign
from killpoint.engine.engine import SESSION_ID, Engine
from killpoint.engine.options import CampaignConfig, EngineConfig
from killpoint.engine.row_trace import copyable
from killpoint.errors import OptionError
from killpoint.kinds import get
from killpoint.stores.sqlite import FILE
from killpoint.values.cell import Cell
from killpoint.values.points import CrashPoint
from killpoint.workers.worker import LEDGER
from tests.benchmarks.kills_equivalence import differences, traced
from tests.harness.live_workers import assert_no_worker_alive

ROW = ("reference", "research", "tool-batch", "sqlite")


@pytest.fixture
def engine(tmp_path: Path) -> Engine:
    return Engine(EngineConfig(work_root=tmp_path / "work", keep="none"))


def test_each_copy_holds_the_checkpoints_of_its_point_and_the_tracer_dies(engine: Engine) -> None:
    base = engine.baseline(ROW)
    points = [CrashPoint("after-checkpoint", k) for k in range(1, base.checkpoints)]
    points += [CrashPoint("mid-commit", 2), CrashPoint("double-resume", 2)]
    trace = engine.trace(base, points)
    assert trace.stopped is None
    assert set(trace.copies) == set(points)
    # The same gates, the same state: one copy serves both kinds.
    assert (
        trace.copies[CrashPoint("double-resume", 2)]
        is trace.copies[CrashPoint("after-checkpoint", 2)]
    )
    adapter = load_adapter("reference")
    for point, copy in trace.copies.items():
        assert (copy.folder / LEDGER).exists()
        held = adapter.progress(f"sqlite:///{copy.folder / FILE}", SESSION_ID)
        assert held == get(point.kind).plan(base, point).checkpoints, point
    last = max(trace.copies.values(), key=lambda c: c.folder.name)
    assert [c.killed for c in trace.copies.values()].count(True) == len(
        {id(c) for c in trace.copies.values() if c.killed}
    )
    assert any(c.killed for c in trace.copies.values())
    assert_no_worker_alive([last.pid])


def test_a_cell_from_its_copy_starts_one_worker_only(engine: Engine) -> None:
    base = engine.baseline(ROW)
    point = CrashPoint("mid-batch", 2, 0)
    copy = engine.trace(base, [CrashPoint("after-checkpoint", 1), point]).copies[point]
    copy.users = 1
    result = engine.run_cell(Cell(*ROW, schedule=(point,)), copy)
    copy.done_with(engine)  # as the campaign does once the cell has ended
    assert (result.verdict, result.expected) == ("ok", True)
    # The tracer's own events come first; of the cell's own workers, only the resumer.
    starts = [e.lane for e in result.timeline if e.kind == "start"]
    assert starts == ["tracer", "resumer"]
    assert traced(result)
    assert not copy.folder.exists()  # its last user removed it


def test_which_cells_resume_from_a_copy() -> None:
    base = Engine(EngineConfig(keep="none")).baseline(ROW)
    assert copyable(Cell(*ROW, schedule=(CrashPoint("mid-model", 2),)), base)
    assert not copyable(Cell(*ROW, schedule=(CrashPoint("sigstop", 1),)), base)
    assert not copyable(Cell(*ROW, schedule=(CrashPoint("power-loss", 1),)), base)
    pg = ("reference", "research", "tool-batch", "postgresql")
    assert not copyable(Cell(*pg, schedule=(CrashPoint("after-checkpoint", 1),)), base)


def test_kills_takes_fast_or_real_and_names_the_choices_otherwise() -> None:
    assert CampaignConfig().kills == "fast"  # one default: the command's, and this
    assert CampaignConfig.from_options(kills="real").kills == "real"
    with pytest.raises(OptionError, match=r"--kills='sometimes'.*choose from fast, real"):
        CampaignConfig.from_options(kills="sometimes")


def campaign(tmp_path: Path, kills: str) -> list:
    # Mode tool-batch, not tool: in mode tool a batch's calls commit one by one as they
    # finish, so which call is in flight at a point differs from run to run on either path
    # (the same id names another repeated call); that is the cell's own nondeterminism,
    # not a difference between a copy and a kill, and would make this test flaky.
    config = CampaignConfig.from_options(
        scenarios="multi-run,side-effects",
        modes="tool-batch",
        points="after-checkpoint,mid-batch,mid-commit,double-resume,provider-forgot,regenerate-ids",
        workers=2,
        keep="none",
        kills=kills,
        work_root=tmp_path / kills,
    )
    return list(Campaign(config).run().cells)


def test_a_slice_of_the_default_matrix_is_judged_the_same_both_ways(tmp_path: Path) -> None:
    real = campaign(tmp_path, "real")
    fast = campaign(tmp_path, "fast")
    found = differences(real, fast)
    assert [] == found["only real"] and [] == found["only fast"]
    assert {} == found["differ"]
    assert not any(traced(c) for c in real)
    # Every cell of the slice is of a kind a copy serves: from its row's copy, or, where
    # the trace passed its point over, with a kill of its own that says why.
    own = [c for c in fast if not traced(c)]
    assert len(own) < len(fast) / 4
    for c in own:
        assert "its row's traced worker did not reach this point" in c.timeline[0].text
    assert any(c.duplicates for c in fast)  # side-effects repeats are counted both ways
