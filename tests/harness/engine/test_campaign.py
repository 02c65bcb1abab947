"""A campaign's own bookkeeping: what finished is recorded once, whenever it is stopped."""

# ruff: noqa: SIM300
from __future__ import annotations

import re
import threading
from collections import Counter
from pathlib import Path

import pytest

from killpoint.engine import campaign
from killpoint.engine.campaign import Campaign, CampaignConfig
from killpoint.engine.engine import Engine
from killpoint.judge.groups import Accepted
from killpoint.values.cell import CellResult

pytestmark = pytest.mark.slow


def test_an_interrupt_in_the_main_thread_loses_no_finished_cell(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The interrupt is raised in the main thread at the first thing it does with a
    finished cell (accepting its findings, or reporting it). Every cell that finished is
    in the result exactly once, and every cell folder left behind (all are kept) is one
    of them: a cell cut short leaves none, a finished one is never dropped (an interrupt
    landing between a cell's end and its record dropped it, under load)."""
    accept = campaign.apply_accepted
    raised: list[bool] = []

    def interrupted_in_main(cells: list[CellResult], accepted: dict[str, Accepted]) -> None:
        if threading.current_thread() is threading.main_thread() and not raised:
            raised.append(True)
            raise KeyboardInterrupt
        accept(cells, accepted)

    monkeypatch.setattr(campaign, "apply_accepted", interrupted_in_main)
    work = tmp_path / "work"
    config = CampaignConfig.from_options(
        scenarios="research", modes="tool-batch", points="boundaries", workers=2,
        keep="all", work_root=str(work),
    )  # fmt: skip

    def interrupt(r: CellResult) -> None:
        if not raised:
            raised.append(True)
            raise KeyboardInterrupt

    result = Campaign(config).run(on_cell=interrupt)
    assert result.interrupted
    ids = Counter(c.id for c in result.cells)
    assert 1 <= len(ids) < result.planned
    assert [] == [i for i, n in ids.items() if n > 1]
    folders = sorted(str(p) for p in work.iterdir() if "baseline" not in p.name)
    assert folders == sorted(str(c.kept) for c in result.cells)


def test_a_campaign_leaves_only_the_folders_its_results_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever kept a cell from settling its folder (here: none of them does), the
    campaign's end removes it: what is left is what its results name as kept."""
    monkeypatch.setattr(Engine, "settle_folder", lambda self, path, keep: None)
    work = tmp_path / "work"
    config = CampaignConfig.from_options(
        scenarios="research", modes="tool-batch", points="after-checkpoint", workers=2,
        keep="failed", work_root=str(work),
    )  # fmt: skip
    result = Campaign(config).run()
    assert not result.interrupted and result.cells
    assert sorted(c.kept for c in result.cells if c.kept) == sorted(map(str, work.iterdir()))


def threads_fail_after(monkeypatch: pytest.MonkeyPatch, allowed: int) -> None:
    """The campaign's cell threads fail to start, after `allowed` have, as CPython's do
    when the process is out of memory or threads (`ulimit -v`, `ulimit -u`)."""
    start = threading.Thread.start
    started: list[str] = []

    def limited(self: threading.Thread) -> None:
        if re.fullmatch(r"cell_\d+", self.name):  # the pool's (not the cells' own)
            if len(started) >= allowed:
                raise RuntimeError("can't start new thread")
            started.append(self.name)
        start(self)

    monkeypatch.setattr(threading.Thread, "start", limited)


def test_a_pool_that_gets_one_thread_runs_every_cell_on_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    threads_fail_after(monkeypatch, 1)
    config = CampaignConfig.from_options(
        scenarios="research", modes="tool-batch", points="boundaries", workers=4,
        work_root=str(tmp_path / "work"),
    )  # fmt: skip
    result = Campaign(config).run()
    assert not result.interrupted
    assert result.planned == len(result.cells) > 1
    assert {"ok"} == {c.verdict for c in result.cells}


def test_no_thread_at_all_makes_the_cells_unavailable_not_the_campaign_lost(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The baselines run in the campaign's own thread; every cell is `unavailable`, its
    finding naming the resource, and nothing is charged to the runtime."""
    threads_fail_after(monkeypatch, 0)
    config = CampaignConfig.from_options(
        scenarios="research", modes="tool-batch", points="boundaries", workers=2,
        work_root=str(tmp_path / "work"),
    )  # fmt: skip
    result = Campaign(config).run()
    assert result.planned == len(result.cells) > 1
    assert {"unavailable"} == {c.verdict for c in result.cells}
    kinds = {f["kind"] for c in result.cells for f in c.findings}
    assert {"resource-exhausted"} == kinds
    assert "can't start new thread" in result.cells[0].detail
    assert not result.failing


BROKEN = "tests.harness.broken_runtimes:early_checkpoint"


def test_fail_fast_stops_at_the_first_unexpected_cell_and_says_what_it_covered(
    tmp_path: Path,
) -> None:
    """A runtime that breaks many cells: the campaign stops at its first unexpected cell
    (the cells at work stopped as at an interrupt), the rest are not run, and the result
    says why it stopped and what ran; it is not an interrupted campaign."""
    from killpoint.report.document import to_document

    config = CampaignConfig.from_options(
        runtime=BROKEN, scenarios="research", modes="tool-batch", points="kills",
        workers=2, fail_fast=True, keep="none", work_root=str(tmp_path / "work"),
    )  # fmt: skip
    result = Campaign(config).run()
    assert result.stopped is not None and not result.interrupted
    assert "fail-fast" == result.stopped.reason
    assert result.unexpected
    assert len(result.cells) < result.planned
    document = to_document(result)
    assert (len(result.cells), result.planned) == (
        document["stopped"]["ran"],
        document["stopped"]["planned"],
    )
    assert "first unexpected cell" in document["narrowed"]


def test_a_spent_budget_stops_the_campaign_with_its_cells_so_far(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The budget is spent once two cells are recorded (a rule that says so): the campaign
    stops there, keeps what finished, and counts the rest not run; nothing fails."""
    from killpoint.engine import stop_rule

    class AfterTwo(stop_rule.StopRule):
        seen = 0

        def after(self, cell: CellResult) -> bool:
            self.seen += 1
            return False

        def due(self, now: float | None = None) -> bool:
            if self.seen >= 2 and self.reason is None:
                self.reason, self.fired_at = stop_rule.BUDGET, 1.0
            return self.reason is not None

    monkeypatch.setattr(campaign, "StopRule", AfterTwo)
    config = CampaignConfig.from_options(
        scenarios="research", modes="tool-batch", points="boundaries", workers=2,
        budget="1h", keep="none", work_root=str(tmp_path / "work"),
    )  # fmt: skip
    result = Campaign(config).run()
    assert result.stopped is not None and "budget" == result.stopped.reason
    assert 2 <= len(result.cells) < result.planned
    assert (len(result.cells), result.planned) == (result.stopped.ran, result.stopped.planned)
    assert not result.interrupted and not result.failing


def test_a_rows_cells_start_before_another_rows_baseline_is_done(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No barrier: the second row's baseline waits for a cell of the first row to finish;
    a campaign that started no cell before every baseline was done would make it wait in
    vain."""
    first_cell = threading.Event()
    waited: list[bool] = []
    baseline, run_cell = Engine.baseline, Engine.run_cell

    def slow_second(self: Engine, row: tuple[str, str, str, str]) -> object:
        if row[2] == "tool" and not waited:  # the row's baseline (its cells ask again)
            waited.append(first_cell.wait(60))
        return baseline(self, row)

    def noted(self: Engine, *args: object, **kwargs: object) -> CellResult:
        result = run_cell(self, *args, **kwargs)  # type: ignore[arg-type]
        first_cell.set()
        return result

    monkeypatch.setattr(Engine, "baseline", slow_second)
    monkeypatch.setattr(Engine, "run_cell", noted)
    config = CampaignConfig.from_options(
        scenarios="research", modes="tool-batch,tool", points="after-checkpoint",
        workers=2, keep="none", work_root=str(tmp_path / "work"),
    )  # fmt: skip
    result = Campaign(config).run()
    assert [True] == waited[:1]
    assert result.planned == len(result.cells) and not result.failing


@pytest.mark.parametrize(
    ("modes", "points", "asks"),
    [
        ("tool-batch", "after-checkpoint", False),  # 1 row, 1 kind: a few cells
        ("runs,tool-batch,tool", "all", True),  # 3 rows, every kind: some 170 cells
    ],
)
def test_only_a_campaign_of_many_cells_asks_for_huge_pages(
    modes: str, points: str, asks: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Huge pages cost the forkserver about 0.2 s as it starts and save each fork a few
    ms: asked for before the first worker, by a campaign that will fork many."""
    asked: list[int] = []
    monkeypatch.setattr(campaign, "use_huge_pages", lambda: asked.append(len(asked)))
    config = CampaignConfig.from_options(
        scenarios="research", modes=modes, points=points, workers=2
    )
    subject = Campaign(config)
    rows, _ = subject.rows()
    floor = subject.at_least_cells(rows)
    assert (floor >= campaign.HUGE_PAGES_FROM) is asks, floor
    monkeypatch.setattr(campaign.Campaign, "_baseline", lambda self, *args: None)
    subject.run()
    assert bool(asked) is asks


def test_a_row_whose_baseline_failed_is_carried_by_a_cell_that_says_it_made_no_crash(
    tmp_path: Path,
) -> None:
    """A runtime whose uninterrupted run returns COMPLETED for a run its store keeps
    RUNNING: the row is not planned, and its one cell says it made no crash and carries
    the baseline's evidence (the status the store holds), for the report's cause."""
    from killpoint.values.findings import NO_CRASH

    config = CampaignConfig.from_options(
        runtime="tests.harness.broken_runtimes:silent_final_write", scenarios="research",
        modes="tool-batch", points="after-checkpoint", keep="none",
        work_root=str(tmp_path / "work"),
    )  # fmt: skip
    (cell,) = Campaign(config).run().cells
    assert cell.timeline[0].text.startswith("plan: no crash"), cell.timeline
    (found,) = cell.findings
    assert "acknowledged-lost" == found["kind"]
    assert {"stored": "RUNNING", NO_CRASH: True}.items() <= found["facts"].items()


def test_a_row_whose_baseline_failed_keeps_the_crash_cells_it_did_not_plan(
    tmp_path: Path,
) -> None:
    """The row's one cell stands for its crash cells; the result says which row and how
    many (its reports say so): counted when the failed run still reached its end (it
    acknowledged a status its store does not hold), unknown when it was cut short (the
    driver cannot start a run); a row whose baseline works is not listed."""
    from tests.harness import failed_baseline

    result = failed_baseline.run(tmp_path / "acknowledged")
    assert {failed_baseline.ROW: failed_baseline.OFFERED} == result.not_planned
    assert 1 == len(result.cells) == result.planned
    never = "tests.harness.broken_adapters:NeverStarts"
    cut_short = failed_baseline.run(tmp_path / "never", runtime=never)
    assert {(never, "research", "tool-batch", "sqlite"): None} == cut_short.not_planned
    working = failed_baseline.run(tmp_path / "working", runtime="reference")
    assert {} == working.not_planned
    assert 4 == working.planned  # after-checkpoint:1..4: one more than the failed row's trace


def test_a_stopped_campaign_says_a_row_whose_baseline_failed_was_not_planned(
    tmp_path: Path,
) -> None:
    """--fail-fast, and the row's one cell (no crash, carrying the failure) is the first
    unexpected one: the stop counts the row as not planned, never as a row every kind of
    whose points ran (it said "every kind of point planned ran in 1 of 1 row")."""
    from tests.harness import failed_baseline

    stopped = failed_baseline.run(tmp_path / "stopped", fail_fast=True).stopped
    assert stopped is not None
    (row,) = stopped.rows
    assert (failed_baseline.ROW, True, (), False) == (
        row.row, row.baseline_failed, row.kinds, row.whole
    )  # fmt: skip
    assert (
        "it stopped at its first unexpected cell (--fail-fast): 1 of 1 cell ran; 1 row not "
        "planned: its baseline failed"
    ) == stopped.sentence()
    assert ["research/tool-batch: its baseline failed; no crash cell planned"] == (
        stopped.partial_lines(8)
    )


def test_a_rerun_of_a_row_whose_baseline_now_fails_keeps_it_not_planned(
    tmp_path: Path,
) -> None:
    """`--rerun-failed` of the row's one cell, and of a crash cell the row had when its
    baseline worked: neither makes a crash now (each carries the failure), so the result
    says the row was not planned, as the first campaign's did; its reports then show the
    cells as what they are. How many crash cells the row offers is not this campaign's to
    say (it runs only the cells asked for)."""
    from tests.harness import failed_baseline

    row = "/".join(failed_baseline.ROW)
    cells = [f"{row}/mid-model:1", f"{row}/after-checkpoint:2"]
    result = failed_baseline.run(tmp_path / "rerun", cells=cells)
    assert {failed_baseline.ROW: None} == result.not_planned
    assert sorted(cells) == sorted(c.id for c in result.cells)
    for cell in result.cells:
        assert cell.timeline[0].text.startswith("plan: no crash"), cell.timeline
