"""The order a tool batch's calls finish in: chosen, not left to the scheduler.

A runtime runs a batch's calls at once (threads, tasks); which one returns to it first is
otherwise the scheduler's choice, so a runtime whose outcome depends on it (results kept in
completion order, a lock scope too narrow) passes one run and fails the next. Here a batch
is the calls of one model reply (the scripted model tells this module each reply it
serves), and each call, its tool's work done, waits at its finish point until the calls
before it in the batch's order have finished, i.e. returned to the runtime. The order is
the reply's own (call 0 first), unless the worker was given another for that batch
(`choose`: a `finish-order` point). So every run finishes its batches' calls in an order
the plan names, and a cell replays exactly.

Waiting never deadlocks a run: a call is not waited for while it is held at an armed gate
(the engine holds it there, scenarios.gates), and a call that has not begun within WAIT
seconds is given up (a runtime that runs its calls one at a time in another order, or
asks the model for its next turn first). The batch's `order` event in the history says the
order kept, and whether it was the one chosen.
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field

from . import gates, history

# Seconds a finishing call waits for a call before it in the order to begin at all.
WAIT = 2.0
_POLL = 0.01  # a waiter looks again this often (a held gate does not wake it)

_lock = threading.Condition()
_batches: list[_Batch] = []
_chosen: dict[int, tuple[int, ...]] = {}
_served = 0  # replies with calls served in this process


@dataclass
class Slot:
    """One call of a batch, as this process saw it run."""

    batch: _Batch
    index: int
    name: str
    arguments: str
    begun: bool = False
    done: bool = False


@dataclass
class _Batch:
    number: int
    order: tuple[int, ...]
    chosen: bool
    slots: list[Slot] = field(default_factory=list)
    finished: list[int] = field(default_factory=list)
    given_up: bool = False


def choose(number: int, order: tuple[int, ...]) -> None:
    """Batch `number` (the `number`-th reply with calls this process is served, from 1)
    finishes its calls in `order` (call indices, first to finish first)."""
    with _lock:
        _chosen[number] = tuple(order)


def reset() -> None:
    global _served
    with _lock:
        _batches.clear()
        _chosen.clear()
        _served = 0


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
        for b in reversed(_batches):
            for slot in b.slots:
                if not slot.begun and (slot.name, slot.arguments) == (name, arguments):
                    slot.begun = True
                    _lock.notify_all()
                    return slot
    return None


def must_wait(slot: Slot | None) -> bool:
    """Whether a call finishing now has calls to wait for (cheap: no waiting here)."""
    if slot is None:
        return False
    with _lock:
        return bool(_before(slot))


def wait(slot: Slot | None) -> None:
    """Block until every call before `slot` in its batch's order has finished, is held at
    an armed gate, or has not begun within WAIT seconds."""
    if slot is None:
        return
    since = time.monotonic()
    with _lock:
        while True:
            waiting = [
                s for s in _before(slot) if not _held(s) and (s.begun or not _late(since))
            ]
            if not waiting:
                if any(not s.begun for s in _before(slot)):
                    slot.batch.given_up = True
                return
            _lock.wait(_POLL)


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


def _before(slot: Slot) -> list[Slot]:
    order = slot.batch.order
    place = order.index(slot.index)
    return [slot.batch.slots[i] for i in order[:place] if not slot.batch.slots[i].done]


def _held(slot: Slot) -> bool:
    return any(
        gates.holding(gates.tool_gate(slot.name, slot.arguments, phase))
        for phase in gates.TOOL_PHASES
    )


def _late(since: float) -> bool:
    return time.monotonic() - since > WAIT


__all__ = ["WAIT", "Slot", "batch", "begin", "choose", "finished", "must_wait", "reset", "wait"]
