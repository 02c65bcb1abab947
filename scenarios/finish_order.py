"""The order a tool batch's calls finish in: chosen, not left to the scheduler.

A runtime runs a batch's calls at once (threads, tasks); which one returns to it first is
otherwise the scheduler's choice, so a runtime whose outcome depends on it (results kept in
completion order, a lock scope too narrow) passes one run and fails the next. Here a batch
is the calls of one model reply (the scripted model tells this module each reply it
serves), and each call, its tool's work done, waits at its finish point until the calls
before it in the batch's order have finished, i.e. returned to the runtime. The order is
the reply's own (call 0 first), unless the worker was given another for that batch
(`choose`: a `finish-order` point). The calls also begin in call order (`start`), so the
call a point holds or kills at "call 0 of batch K" is the same one in every run. So every
run finishes its batches' calls in an order the plan names, and a cell replays exactly.

Returned to the runtime means its result reached the runtime's own code: for a tool the
runtime runs in a thread through `asyncio.to_thread` (the reference runtime does), when
that await returns in the event loop (`install` wraps it in the worker), so the next call's
result cannot reach the loop first; otherwise when the tool's wrapper returns.

A worker that resumes a run may take a batch's reply from its store rather than from the
model (the reference runtime's reply journal): it is told the baseline's batches (`known`),
and a call no reply served here is placed in the first of those that asked for it.

Waiting never deadlocks a run: a call is not waited for while it is held at an armed gate
(the engine holds it there, scenarios.gates), and a call that has not begun within WAIT
seconds is given up (a runtime that runs its calls one at a time in another order, or
asks the model for its next turn first); within KNOWN_WAIT for a batch taken from the
store, whose calls that already have a durable result a runtime may not run again. The
batch's `order` event in the history says the order kept, and whether it was the one
chosen.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from . import gates, history

T = TypeVar("T")

# Seconds a finishing call waits for a call before it in the order to begin at all.
WAIT = 2.0
KNOWN_WAIT = 0.3  # the same, in a batch known from the baseline (taken from the store)
_POLL = 0.01  # a waiter looks again this often (a held gate does not wake it)
# A call that has begun is waited for longer, not forever: a worker woken after a takeover
# may hold a begun call that never starts or finishes (its run taken), and must go on.
BEGUN_TIMES = 5

_lock = threading.Condition()
_batches: list[_Batch] = []
_known: list[_Batch] = []  # the baseline's batches, for calls no reply served here
_chosen: dict[int, tuple[int, ...]] = {}
_served = 0  # replies with calls served in this process
_over = False  # the driver has returned: no call's result is awaited in order any more


@dataclass
class Slot:
    """One call of a batch, as this process saw it run."""

    batch: _Batch
    index: int
    name: str
    arguments: str
    begun: bool = False
    started: bool = False  # past its `started` gate
    done: bool = False
    abandoned: bool = False  # waited for once in vain: the runtime does not run it here


@dataclass
class _Batch:
    number: int
    order: tuple[int, ...]
    chosen: bool
    slots: list[Slot] = field(default_factory=list)
    finished: list[int] = field(default_factory=list)
    given_up: bool = False
    known: bool = False  # the baseline's, not a reply served here


def choose(number: int, order: tuple[int, ...]) -> None:
    """Batch `number` (the `number`-th reply with calls this process is served, from 1)
    finishes its calls in `order` (call indices, first to finish first)."""
    with _lock:
        _chosen[number] = tuple(order)


def reset() -> None:
    global _served, _over
    with _lock:
        _batches.clear()
        _known.clear()
        _chosen.clear()
        _served = 0
        _over = False


def over() -> None:
    """The worker's driver has returned or raised: no run reads a result here any more.
    A call still waiting for one ahead of it goes on at once, as one given up would: a
    woken worker whose run was taken leaves calls that began and never return (their
    task cancelled), and its exit waits for every call's thread."""
    global _over
    with _lock:
        _over = True
        _lock.notify_all()


def known(batches: list[list[list[str]]] | tuple[tuple[tuple[str, str], ...], ...]) -> None:
    """The baseline's batches, in order ([name, canonical arguments] per call): where a
    call goes that no reply served to this process asked for."""
    with _lock:
        _known.clear()
        for number, calls in enumerate(batches, start=1):
            b = _Batch(number, tuple(range(len(calls))), False, known=True)
            b.slots = [Slot(b, i, str(n), str(a)) for i, (n, a) in enumerate(calls)]
            _known.append(b)


def batch(calls: list[list[str]]) -> None:
    """A reply with `calls` ([name, canonical arguments] each) was served to this process."""
    global _served
    if not calls:
        return
    with _lock:
        _served += 1
        chosen = _chosen.get(_served)
        identity = tuple(range(len(calls)))
        order = chosen if chosen is not None and sorted(chosen) == list(identity) else identity
        b = _Batch(_served, order, chosen is not None)
        b.slots = [Slot(b, i, str(n), str(a)) for i, (n, a) in enumerate(calls)]
        _batches.append(b)


def begin(name: str, arguments: str) -> Slot | None:
    """A call of a tool begins: its slot in the latest batch that asked for it (None: a
    call of no batch served here, e.g. one a resumed run replays from its store)."""
    with _lock:
        for b in [*reversed(_batches), *_known]:
            for slot in b.slots:
                if not slot.begun and (slot.name, slot.arguments) == (name, arguments):
                    slot.begun = True
                    _lock.notify_all()
                    return slot
    return None


def must_start_later(slot: Slot | None) -> bool:
    """Whether a call beginning now has calls before it (in call order) yet to begin."""
    if slot is None:
        return False
    with _lock:
        return bool(_unbegun(slot))


def start(slot: Slot | None) -> None:
    """Block until every call before `slot` in call order is past its `started` gate (or
    held at it, or has not begun within the patience: the runtime does not run it here).
    Calls start in call order in every run, so which of them a plan's point holds or
    kills is the same in every run. Only a call that has not begun is given up: one that
    has begun is on its way (itself waiting to start, at most its own patience), and
    giving it up too would let this call overtake it in the finish order as well; it is
    waited for BEGUN_TIMES patiences at most."""
    if slot is None:
        return
    _await(slot, _unbegun, lambda s: _held(s, "started"))


def must_wait(slot: Slot | None) -> bool:
    """Whether a call finishing now has calls to wait for (cheap: no waiting here)."""
    if slot is None:
        return False
    with _lock:
        return bool(_before(slot))


def wait(slot: Slot | None) -> None:
    """Block until every call before `slot` in its batch's order has finished, is held at
    an armed gate, or has not begun within the patience (WAIT, or KNOWN_WAIT)."""
    if slot is None:
        return
    _await(slot, _before, lambda s: any(_held(s, phase) for phase in gates.TOOL_PHASES))


def _await(slot: Slot, ahead: Callable[[Slot], list[Slot]], held: Callable[[Slot], bool]) -> None:
    """Block until no slot `ahead(slot)` is still to wait for: each is held at an armed
    gate, or has not begun within the patience (then given up), or has begun but not gone
    on within BEGUN_TIMES patiences (a woken worker's call whose run was taken)."""
    since = time.monotonic()
    with _lock:
        while True:
            spent = time.monotonic() - since
            late, gone = spent > _patience(slot), spent > BEGUN_TIMES * _patience(slot)
            # Once the driver is over, nobody reads a result in order any more.
            waiting = [
                s
                for s in ([] if _over else ahead(slot))
                if not held(s) and ((s.begun and not gone) or not late)
            ]
            if not waiting:
                for s in ahead(slot):
                    if not s.begun:
                        s.abandoned = True
                        slot.batch.given_up = True
                return
            _lock.wait(_POLL)


def _patience(slot: Slot) -> float:
    return KNOWN_WAIT if slot.batch.known else WAIT


def started(slot: Slot | None) -> None:
    """The call is past its `started` gate: the next in call order may start."""
    if slot is None:
        return
    with _lock:
        slot.started = True
        _lock.notify_all()


def _unbegun(slot: Slot) -> list[Slot]:
    """The calls before `slot` in call order not yet started (nor given up)."""
    return [s for s in slot.batch.slots[: slot.index] if not s.started and not s.abandoned]


def finished(slot: Slot | None) -> None:
    """The call has returned to the runtime (or was cut short): later calls may go."""
    if slot is None:
        return
    with _lock:
        slot.done = True
        b = slot.batch
        b.finished.append(slot.index)
        _lock.notify_all()
        if len(b.finished) < len(b.slots) or len(b.slots) < 2:
            return  # a batch of one call has no order to tell
        kept = tuple(b.finished) == b.order and not b.given_up
    history.record("order", batch=b.number, order=b.finished, chosen=list(b.order), kept=kept)


class _Delivery:
    """Where a tool's wrapper, run in a thread by asyncio.to_thread, leaves its slot for
    the awaiting coroutine to mark finished once the result is back in the loop."""

    def __init__(self, func: Any) -> None:
        self.func = func  # what to_thread runs: the wrapper itself, or the slot is not left
        self.slot: Slot | None = None


_delivery: contextvars.ContextVar[_Delivery | None] = contextvars.ContextVar(
    "killpoint_delivery", default=None
)


def handed_back(slot: Slot | None, wrapper: Any) -> None:
    """The tool's `wrapper` is done with `slot`: finished now, or, when the runtime ran
    `wrapper` itself through asyncio.to_thread (not a thread that runs more than the
    tool), once that hands the result back to the runtime."""
    delivery = _delivery.get()
    if delivery is not None and slot is not None and delivery.func is wrapper:
        delivery.slot = slot
        return
    finished(slot)


_installed = False


def install() -> None:
    """In this (worker) process, make `asyncio.to_thread` mark a tool's call finished only
    once its result is back in the event loop (see the module's docstring). Once."""
    global _installed
    if _installed:
        return
    _installed = True
    original = asyncio.to_thread

    async def to_thread(func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        delivery = _Delivery(func)
        # Set while the original runs: it copies this context into the thread. Nothing
        # else of this task runs meanwhile (it is suspended here).
        token = _delivery.set(delivery)
        try:
            return await original(func, *args, **kwargs)
        finally:
            _delivery.reset(token)
            finished(delivery.slot)

    to_thread.__doc__ = original.__doc__
    asyncio.to_thread = to_thread


def _before(slot: Slot) -> list[Slot]:
    order = slot.batch.order
    place = order.index(slot.index)
    return [
        s for s in (slot.batch.slots[i] for i in order[:place]) if not s.done and not s.abandoned
    ]


def _held(slot: Slot, phase: str) -> bool:
    """Whether the engine holds the call at its gate of `phase` (started: it cannot start
    before it is released; finished: its work is done and its result is held back)."""
    return gates.holding(gates.tool_gate(slot.name, slot.arguments, phase))


__all__ = [
    "KNOWN_WAIT",
    "WAIT",
    "Slot",
    "batch",
    "begin",
    "choose",
    "finished",
    "handed_back",
    "install",
    "known",
    "must_start_later",
    "must_wait",
    "over",
    "reset",
    "start",
    "started",
    "wait",
]
