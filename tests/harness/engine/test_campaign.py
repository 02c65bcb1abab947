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
