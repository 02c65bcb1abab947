"""Slots: cells at work at once, a slot lent while a cell waits on the clock."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from killpoint.engine.polling import poll
from killpoint.engine.slots import Slots, _Places
from killpoint.errors import Interrupted

WAIT = 10.0  # seconds an event may take on a loaded machine before the test gives up


def started(fn: Callable[[], object]) -> threading.Thread:
    t = threading.Thread(target=fn, daemon=True)
    t.start()
    return t


def test_a_slot_is_held_until_its_cell_ends() -> None:
    slots = Slots(1)
    order: list[str] = []
    a_in, a_go = threading.Event(), threading.Event()

    def a() -> None:
        order.append("a in")
        a_in.set()
        a_go.wait(WAIT)
        order.append("a out")

    started(lambda: slots.working(a)())
    assert a_in.wait(WAIT)
    b = started(lambda: slots.working(lambda: order.append("b in"))())
    # Looking for what must not happen: b may not start while a works.
    b.join(0.2)
    assert order == ["a in"]
    a_go.set()
    b.join(WAIT)
    assert order == ["a in", "a out", "b in"]


def test_a_cell_asleep_on_the_clock_lends_its_slot() -> None:
    stopping = threading.Event()
    slots = Slots(1, stopping, lend=True)
    a_in, a_out, b_in = threading.Event(), threading.Event(), threading.Event()
    woke: list[float] = []

    def a() -> None:
        a_in.set()
        slots.sleep_until(time.time() + 600)  # ended below, by the campaign stopping
        woke.append(time.time())
        a_out.set()

    started(lambda: slots.working(a)())
    assert a_in.wait(WAIT)
    started(lambda: slots.working(b_in.set)())
    assert b_in.wait(WAIT), "the sleeping cell kept its slot"
    assert not a_out.is_set()
    stopping.set()
    assert a_out.wait(WAIT), "a stopping campaign did not end the wait"


def test_a_cell_waiting_on_a_worker_lends_its_slot_for_the_block_only() -> None:
    """`lent()`: another cell takes the slot while the block waits; after the block the
    lender holds it again, and a third cell waits for it."""
    slots = Slots(1, threading.Event(), lend=True)
    a_in, a_go, a_after, b_in, c_in = (threading.Event() for _ in range(5))
    overlap: list[bool] = []

    def a() -> None:
        with slots.lent():
            a_in.set()
            a_go.wait(WAIT)
        a_after.set()
        overlap.append(c_in.wait(0.3))  # the slot is a's again: c may not start meanwhile

    done = started(lambda: slots.working(a)())
    assert a_in.wait(WAIT)
    started(lambda: slots.working(b_in.set)())
    assert b_in.wait(WAIT), "the waiting cell kept its slot"
    a_go.set()
    assert a_after.wait(WAIT)
    started(lambda: slots.working(c_in.set)())
    done.join(WAIT)
    assert overlap == [False], "a cell started while the lender held its slot again"
    assert c_in.wait(WAIT)


def test_the_sleeper_takes_a_slot_again_before_it_goes_on() -> None:
    stopping = threading.Event()
    slots = Slots(1, stopping, lend=True)
    a_in, a_after, b_in, b_go = (threading.Event() for _ in range(4))
    order: list[str] = []

    def a() -> None:
        a_in.set()
        slots.sleep_until(time.time() + 600)  # ended below, by the campaign stopping
        order.append("a after its sleep")
        a_after.set()

    def b() -> None:
        b_in.set()
        b_go.wait(WAIT)
        order.append("b out")

    done = started(lambda: slots.working(a)())
    assert a_in.wait(WAIT)
    started(lambda: slots.working(b)())
    assert b_in.wait(WAIT)
    stopping.set()  # a's sleep ends while b holds the slot: a must wait for it
    done.join(0.3)
    assert not a_after.is_set()
    b_go.set()
    done.join(WAIT)
    assert order == ["b out", "a after its sleep"]


def test_a_cell_that_waited_for_a_slot_while_the_campaign_stopped_does_not_run() -> None:
    stopping = threading.Event()
    slots = Slots(1, stopping)
    a_in, a_go = threading.Event(), threading.Event()
    ran: list[str] = []
    raised: list[BaseException] = []

    def b() -> None:
        try:
            slots.working(lambda: ran.append("b"))()
        except Interrupted as exc:
            raised.append(exc)

    started(lambda: slots.working(lambda: (a_in.set(), a_go.wait(WAIT)))())
    assert a_in.wait(WAIT)
    waiting = started(b)
    stopping.set()
    a_go.set()
    waiting.join(WAIT)
    assert ran == [] and len(raised) == 1


def test_outside_a_campaign_nothing_waits_for_a_slot() -> None:
    slots = Slots(None)
    inner = slots.working(lambda: slots.working(lambda: "nested")())
    assert inner() == "nested"
    t0 = time.time()
    slots.sleep_until(t0 + 0.05)
    assert time.time() >= t0 + 0.05


@pytest.mark.parametrize("limit", [1, 3])
def test_a_pool_has_threads_for_the_sleepers(limit: int) -> None:
    assert Slots(limit).threads > limit


def test_a_cell_back_from_its_sleep_goes_before_a_cell_not_yet_begun() -> None:
    places = _Places(1)
    places.acquire()  # every place taken
    order: list[str] = []

    def take(name: str, first: bool) -> None:
        places.acquire(first=first)
        order.append(name)
        places.release()

    new = started(lambda: take("new cell", first=False))
    assert poll(lambda: places.waiting == 1, WAIT, threading.Event())
    back = started(lambda: take("back from its sleep", first=True))
    assert poll(lambda: places.waiting == 2, WAIT, threading.Event())
    places.release()
    new.join(WAIT)
    back.join(WAIT)
    assert order == ["back from its sleep", "new cell"]


@pytest.mark.parametrize("limit", [1, 2, 3])
def test_many_takers_never_exceed_the_places_and_none_is_left_waiting(limit: int) -> None:
    places = _Places(limit)
    inside = [0]
    most = [0]
    count = threading.Lock()

    def taker(n: int) -> None:
        for i in range(200):
            places.acquire(first=(n + i) % 3 == 0)
            with count:
                inside[0] += 1
                most[0] = max(most[0], inside[0])
            with count:
                inside[0] -= 1
            places.release()

    threads = [started(lambda n=n: taker(n)) for n in range(8)]
    for t in threads:
        t.join(WAIT * 3)
    assert not any(t.is_alive() for t in threads), "a taker was left waiting: a lost wake-up"
    assert 1 <= most[0] <= limit


def test_two_places_freed_at_once_reach_a_first_taker_and_another() -> None:
    places = _Places(2)
    places.acquire()
    places.acquire()
    took: list[str] = []

    def take(name: str, first: bool) -> None:
        places.acquire(first=first)
        took.append(name)

    rest = started(lambda: take("rest", first=False))
    assert poll(lambda: places.waiting == 1, WAIT, threading.Event())
    first = started(lambda: take("first", first=True))
    assert poll(lambda: places.waiting == 2, WAIT, threading.Event())
    places.release()
    places.release()  # most often before the first taker runs: both wake-ups went to it
    first.join(WAIT)
    rest.join(WAIT)
    assert sorted(took) == ["first", "rest"]


def test_one_slot_is_one_cell_at_a_time_even_asleep() -> None:
    slots = Slots(1)
    a_in, a_out = threading.Event(), threading.Event()
    order: list[str] = []

    def a() -> None:
        a_in.set()
        slots.sleep_until(time.time() + 0.3)
        order.append("a out")
        a_out.set()

    started(lambda: slots.working(a)())
    assert a_in.wait(WAIT)
    b = started(lambda: slots.working(lambda: order.append("b in"))())
    assert a_out.wait(WAIT)
    b.join(WAIT)
    assert order == ["a out", "b in"]
