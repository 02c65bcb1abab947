"""The scheduler: jobs started in an order, waited for to the last (those a job starts from
its own thread too), and its two seams, a cell order and a stop condition."""

# ruff: noqa: SIM300
from __future__ import annotations

import queue
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from killpoint.engine import scheduler as sched
from killpoint.engine.campaign import Campaign, CampaignConfig
from killpoint.engine.scheduler import Scheduler
from killpoint.engine.slots import Slots
from killpoint.values.cell import Cell


def test_drain_takes_everything_waiting_and_waits_only_for_the_first() -> None:
    items: queue.SimpleQueue[int] = queue.SimpleQueue()
    assert sched.drain(items, timeout=0.01) == []
    for n in (1, 2, 3):
        items.put(n)
    assert sched.drain(items, timeout=0.01) == [1, 2, 3]
    # A put from another thread, landing before or during the wait: taken either way.
    ready = threading.Event()

    def later() -> None:
        ready.wait()
        items.put(4)

    thread = threading.Thread(target=later)
    thread.start()
    ready.set()
    assert sched.drain(items, timeout=60) == [4]
    thread.join()


def test_wait_ends_after_every_job_and_the_jobs_they_started() -> None:
    scheduler = Scheduler(Slots(2))
    done: list[str] = []
    lock = threading.Lock()

    def job(name: str, then: list[str]) -> None:
        for child in then:
            scheduler.start(job, child, [])
        with lock:
            done.append(name)

    scheduler.start(job, "a", ["a1", "a2"])
    scheduler.start(job, "b", [])
    scheduler.wait()
    scheduler.shutdown(wait=True)
    assert ["a", "a1", "a2", "b"] == sorted(done)


def test_a_stop_condition_cancels_what_has_not_begun_and_refuses_the_rest() -> None:
    """One slot; the first job holds it until the condition has stopped the scheduler:
    the jobs queued behind it never run, and a job started afterwards is refused."""
    stopped = threading.Event()
    ran: list[int] = []
    scheduler = Scheduler(Slots(1), stop=lambda: "enough" if ran else None)
    release = threading.Event()

    def first() -> None:
        ran.append(0)
        release.wait(timeout=60)

    def later(n: int) -> None:
        ran.append(n)

    scheduler.start(scheduler.slots.working(first))
    for n in range(1, 40):  # more than the pool's threads: most wait in its queue
        scheduler.start(scheduler.slots.working(later), n)

    def tick() -> None:
        if scheduler.stopped is not None and not stopped.is_set():
            stopped.set()
            release.set()

    scheduler.wait(tick)
    scheduler.shutdown(wait=True)
    assert "enough" == scheduler.stopped
    assert len(ran) < 40 - 1  # what had not begun was cancelled
    assert None is scheduler.start(later, 99)


def test_a_campaign_orders_its_cells_and_starts_none_once_stopped(tmp_path: Path) -> None:
    """The campaign's seams: every planned cell goes through `order` once; once `stop`
    names a reason no further cell begins, and what ran is recorded once."""
    given: list[Cell] = []

    def backwards(cells: Sequence[Cell]) -> list[Cell]:
        given.extend(cells)
        return list(reversed(cells))

    recorded: list[str] = []
    config = CampaignConfig.from_options(
        scenarios="research", modes="tool-batch", points="kills", workers=1, kills="real",
        keep="none", work_root=str(tmp_path / "work"),
    )  # fmt: skip
    campaign = Campaign(config, order=backwards, stop=lambda: "one is enough" if recorded else None)
    result = campaign.run(on_cell=lambda r: recorded.append(r.id))
    assert sorted(c.id for c in given) == sorted(set(c.id for c in given))
    assert len(given) == result.planned > 8
    assert 1 <= len(result.cells) < result.planned
    assert len({c.id for c in result.cells}) == len(result.cells)
    assert not result.interrupted


@pytest.mark.parametrize("stop", [sched.never])
def test_by_default_nothing_stops_and_the_plan_is_the_order(stop: sched.StopCondition) -> None:
    assert None is stop()
    cells = [Cell("r", "s", "m", "sqlite", ())]
    assert cells == sched.as_planned(cells)
