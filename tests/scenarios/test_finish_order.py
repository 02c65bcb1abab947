# ruff: noqa: SIM300 - tests assert `expected == actual`
"""A batch's calls finish in the order chosen for it, not the scheduler's: run through
asyncio.to_thread as the reference runtime runs tools, with tools whose work ends in the
reverse of call order; a call held at an armed gate is not waited for; a call that never
begins is given up after a while."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from killpoint.scenarios import finish_order, gates, history
from killpoint.scenarios.ledger import Ledger
from killpoint.scenarios.tooling import ToolEnv


@pytest.fixture(autouse=True)
def fresh(tmp_path: Path) -> Iterator[None]:
    finish_order.reset()
    finish_order.install()
    history.configure(tmp_path / history.HISTORY)
    yield
    history.configure(None)
    gates.disarm()
    finish_order.reset()


def tools(tmp_path: Path, seen: list[str]) -> object:
    """fetch(page): its work takes longer the earlier its page, so the scheduler would
    finish the calls last first."""
    delays = {"a": 0.15, "b": 0.08, "c": 0.0}

    def fetch(page: str) -> str:
        time.sleep(delays[page])
        return page

    return ToolEnv(Ledger(tmp_path / "ledger.jsonl", "t")).wrap(fetch)


async def batch(fn: object, pages: list[str], seen: list[str]) -> None:
    """What a runtime does with a batch: each call in a thread, each result taken as it
    comes back."""

    async def one(page: str) -> None:
        seen.append(await asyncio.to_thread(fn, page=page))  # type: ignore[arg-type]

    await asyncio.gather(*(one(p) for p in pages))


def served(pages: list[str]) -> None:
    finish_order.batch([["fetch", f'{{"page":"{p}"}}'] for p in pages])


def test_calls_come_back_in_call_order_whatever_their_work_takes(tmp_path: Path) -> None:
    seen: list[str] = []
    served(["a", "b", "c"])
    asyncio.run(batch(tools(tmp_path, seen), ["a", "b", "c"], seen))
    assert ["a", "b", "c"] == seen
    (order,) = [e for e in history.read(tmp_path / history.HISTORY) if e.event == "order"]
    assert ([0, 1, 2], True) == (order.get("order"), order.get("kept"))


@pytest.mark.parametrize("chosen", [(2, 0, 1), (1, 2, 0), (0, 2, 1)])
def test_a_chosen_order_is_the_order_the_runtime_sees(
    tmp_path: Path, chosen: tuple[int, ...]
) -> None:
    """Twenty times each: the order is the plan's, never the scheduler's."""
    for _ in range(20):
        finish_order.reset()
        finish_order.choose(1, chosen)
        seen: list[str] = []
        served(["a", "b", "c"])
        asyncio.run(batch(tools(tmp_path, seen), ["a", "b", "c"], seen))
        assert [["a", "b", "c"][i] for i in chosen] == seen


def test_a_call_held_at_an_armed_gate_is_not_waited_for(tmp_path: Path) -> None:
    """Call 0 is held at its finished gate (the engine holds it there): calls 1 and 2 come
    back meanwhile, then call 0 once released."""
    released = threading.Event()
    announced = threading.Event()
    held = gates.tool_gate("fetch", {"page": "a"}, "finished")
    gates.configure(
        [held], announce=lambda name: announced.set(), wait=lambda name: released.wait()
    )
    seen: list[str] = []
    served(["a", "b", "c"])

    async def go() -> None:
        task = asyncio.ensure_future(batch(tools(tmp_path, seen), ["a", "b", "c"], seen))
        while len(seen) < 2:
            await asyncio.sleep(0.01)
        assert announced.is_set()
        released.set()
        await task

    asyncio.run(go())
    assert ["b", "c", "a"] == seen


def test_a_call_that_never_begins_is_given_up(tmp_path: Path) -> None:
    """A runtime that runs only calls 1 and 2 of a three-call batch: call 1 waits for call 0
    no longer than WAIT, and the history says the order was not kept."""
    seen: list[str] = []
    served(["a", "b", "c"])
    t0 = time.monotonic()
    asyncio.run(batch(tools(tmp_path, seen), ["b", "c"], seen))
    assert ["b", "c"] == seen
    assert finish_order.WAIT <= time.monotonic() - t0 < finish_order.WAIT + 2


def test_a_call_that_has_begun_is_waited_for_past_the_patience(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Call 2 outlasts its patience while call 0 never begins and call 1 has begun but not
    started (itself still waiting for call 0): call 0 is given up, call 1 is waited for,
    so call 2 can overtake it neither in starting nor in finishing. (A begun call is given
    up only after BEGUN_TIMES patiences, raised here far past the test's own wait.)"""
    monkeypatch.setattr(finish_order, "WAIT", 0.2)
    monkeypatch.setattr(finish_order, "BEGUN_TIMES", 100)
    served(["a", "b", "c"])
    b = finish_order.begin("fetch", '{"page":"b"}')
    c = finish_order.begin("fetch", '{"page":"c"}')
    assert b is not None and c is not None
    returned = threading.Event()
    waiter = threading.Thread(target=lambda: (finish_order.start(c), returned.set()))
    waiter.start()
    try:
        assert not returned.wait(5 * finish_order.WAIT)
        finish_order.started(b)
        assert returned.wait(5)
    finally:
        finish_order.started(b)
        waiter.join(5)
    a = c.batch.slots[0]
    assert (True, False, True) == (a.abandoned, b.abandoned, c.batch.given_up)


def test_once_the_driver_has_returned_no_call_waits_for_its_turn() -> None:
    """A woken worker whose run was taken: call 0 began and will never return (its task
    was cancelled), call 1 waits to finish after it. Once the driver is over, call 1 goes
    on at once, not after BEGUN_TIMES patiences (asyncio.run's exit waits for its thread)."""
    served(["a", "b"])
    a = finish_order.begin("fetch", '{"page":"a"}')
    b = finish_order.begin("fetch", '{"page":"b"}')
    assert a is not None and b is not None
    finish_order.started(a)
    finish_order.started(b)
    returned = threading.Event()
    waiter = threading.Thread(target=lambda: (finish_order.wait(b), returned.set()))
    waiter.start()
    try:
        assert not returned.wait(0.3)  # call 0 has begun: waited for
        finish_order.over()
        assert returned.wait(finish_order.WAIT), "call 1 still waited after the driver ended"
    finally:
        finish_order.over()
        waiter.join(5)
    finish_order.reset()  # a worker's next life: ordered again
    served(["a", "b"])
    again = [finish_order.begin("fetch", f'{{"page":"{p}"}}') for p in "ab"]
    assert None not in again
    returned.clear()
    waiter = threading.Thread(target=lambda: (finish_order.wait(again[1]), returned.set()))
    waiter.start()
    try:
        assert not returned.wait(0.3)
    finally:
        finish_order.over()
        waiter.join(5)
