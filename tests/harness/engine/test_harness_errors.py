"""killpoint's own failures inside a cell are that cell's result: an exception becomes an
`error` finding with its traceback, a worker gone before its release is an event, and the
campaign goes on."""

# ruff: noqa: SIM300
from __future__ import annotations

import time
from pathlib import Path

import pytest

from killpoint.engine.campaign import Campaign, CampaignConfig
from killpoint.engine.cell_run import CellRun
from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig
from killpoint.engine.state_copy import Copy
from killpoint.errors import Interrupted
from killpoint.judge.baseline import Baseline
from killpoint.values.cell import Cell, Row
from killpoint.values.points import CrashPoint
from killpoint.workers.processes import Worker

pytestmark = pytest.mark.slow
ROW = ("reference", "research", "tool-batch", "sqlite")


def test_an_exception_in_a_cell_is_its_error_finding(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A harness exception in one cell: that cell is `error` with the traceback as
    evidence; the campaign records every other cell as usual."""
    execute = CellRun.execute

    def broken_on_2(self: CellRun, copy: Copy | None = None) -> None:
        if str(self.cell.schedule) == "after-checkpoint:2":
            raise RuntimeError("a harness bug")
        execute(self, copy)

    monkeypatch.setattr(CellRun, "execute", broken_on_2)
    config = CampaignConfig.from_options(
        scenarios="research", modes="tool-batch", points="boundaries", workers=2,
        work_root=str(tmp_path / "work"),
    )  # fmt: skip
    result = Campaign(config).run()
    verdicts = {c.schedule[0]: c.verdict for c in result.cells}
    assert result.planned == len(result.cells) >= 4
    assert "error" == verdicts.pop("after-checkpoint:2")
    assert {"ok"} == set(verdicts.values())
    broken = next(c for c in result.cells if c.verdict == "error")
    assert "RuntimeError: a harness bug" in broken.detail
    assert any("broken_on_2" in line for line in broken.findings[0]["evidence"])


def test_releasing_a_worker_that_has_ended_is_no_exception(tmp_path: Path) -> None:
    engine = Engine(EngineConfig(work_root=tmp_path / "work"))
    work = engine.work_dir("release")
    url = engine.stores.fresh(work)
    timeline: list = []
    worker = Worker(engine.worker_spec(ROW, url, work), timeline, time.monotonic())
    assert "done" == worker.join(time.monotonic() + 60).kind
    worker.release("checkpoint:1:writing")  # its pipe is closed: nothing to release
    assert any("gone before its release" in e.text for e in timeline)


def test_an_exception_in_a_baseline_is_its_rows_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = Engine(EngineConfig(work_root=tmp_path / "work"))

    def broken(row: Row) -> None:
        raise RuntimeError("a baseline harness bug")

    monkeypatch.setattr(engine, "_make_baseline", broken)
    result = engine.run_cell(Cell(*ROW, schedule=(CrashPoint("after-checkpoint", 1),)))
    assert "error" == result.verdict
    assert "RuntimeError: a baseline harness bug" in result.detail


@pytest.mark.parametrize("ends", ["raises", "fails"])
def test_a_baseline_cut_short_by_the_stop_is_no_result(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ends: str
) -> None:
    """The stop kills the baseline's worker under it (in its first run or its second):
    whether that surfaces as an exception or as a failed run, it is the stop, not a row
    that killpoint could not run (planned with one cell of its own), and nothing is
    cached for the row."""
    engine = Engine(EngineConfig(work_root=tmp_path / "work"))

    def cut_short(row: Row) -> Baseline:
        engine.stopping.set()
        if ends == "raises":
            raise OSError(9, "Bad file descriptor")
        base = Baseline(*row)
        base.problem, base.problem_kind = "the baseline run failed (died)", "missed"
        return base

    monkeypatch.setattr(engine, "_make_baseline", cut_short)
    with pytest.raises(Interrupted):
        engine.baseline(ROW)
    assert ROW not in engine._baselines
