"""Calls whose result a checkpoint left out, read from a crashed worker's history.

A call whose effect was done and whose result the store does not hold at a crash may run
again once: the bound allows it, since no runtime can make an effect and its record one
atomic act. That holds while the call is in flight. In a mode whose results are durable
with their whole batch (killpoint.values.modes: not per call, written mid-run, not lagging),
a checkpoint that began after every call of the batch had returned is the batch's, and
must hold their results. One that does not left them out: the runtime had each result in
hand when it wrote the checkpoint, so a crash after that checkpoint is not in the call's
flight, and a repeat of it is beyond the bound.

The witness is the worker's own history: the reply that asked for the batch, each call's
effect and return, then the checkpoint's write and commit, in the order the worker
recorded them (its `n`). Calls of the batch the history never saw begin (tools that record
no effect) cannot be waited for and are not held against the checkpoint.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from killpoint.judge.baseline import as_effects
from killpoint.scenarios.conversation import canonical_arguments
from killpoint.scenarios.history import Event
from killpoint.scenarios.ledger import Entry
from killpoint.values.modes import Mode

Signature = tuple[str, str]


def batch_durable(mode: Mode | None) -> bool:
    """Whether `mode` makes a batch's results durable with the batch: its checkpoints after
    a finished batch must hold the batch's results."""
    return (
        mode is not None
        and mode.persists_mid_run
        and mode.tool_results_durable
        and not mode.results_per_call
        and not mode.writes_lag
    )


def left_out(
    events: Sequence[Event],
    in_flight: Counter[Signature],
    entries: Sequence[Entry],
    held: int,
) -> dict[Signature, int]:
    """Of `in_flight` (effect done, result not durable at the crash), the calls a landed
    checkpoint left out, each with that checkpoint's number: the checkpoint began, in the
    worker that ran the call, after the call and every other call of its batch that began
    had returned, it committed, and the store still holds it (`held`: the checkpoints it
    holds at the crash; a power cut takes back what was not synced)."""
    by_pid: dict[int, list[Event]] = {}
    for e in events:
        by_pid.setdefault(e.pid, []).append(e)
    found: dict[Signature, int] = {}
    for done in events:
        if done.event != "effect-done":
            continue
        sig = _signature(done, entries)
        if sig not in in_flight or sig in found:
            continue
        number = _checkpoint_after_batch(by_pid[done.pid], done)
        if number is not None and number <= held:
            found[sig] = number
    return found


def _signature(event: Event, entries: Sequence[Entry]) -> Signature:
    call = (str(event.get("tool")), canonical_arguments(str(event.get("arguments"))))
    (sig,) = as_effects(Counter([call]), entries)
    return sig


def _checkpoint_after_batch(mine: list[Event], done: Event) -> int | None:
    """The first checkpoint that committed, begun in `done`'s worker (`mine`: its events)
    after every call of its batch that began had returned; None if none did before the
    next model request."""
    at = mine.index(done)
    reply = next((e for e in reversed(mine[:at]) if e.event == "model-reply"), None)
    if reply is None:
        return None
    begun, returned = Counter[tuple[str, str]](), Counter[tuple[str, str]]()
    for e in mine[mine.index(reply) + 1 :]:
        if e.event == "model-request":
            return None  # the next turn: the batch's own checkpoint never came
        if e.event == "effect":
            begun[_call(e)] += 1
        elif e.event == "effect-done":
            returned[_call(e)] += 1
        elif e.n > done.n and _checkpoint(e, "write") and not begun - returned:
            number = e.get("number")
            landed = any(_checkpoint(x, "committed", number) for x in mine if x.n > e.n)
            return int(number) if landed and isinstance(number, int) else None
    return None


def _call(event: Event) -> tuple[str, str]:
    return str(event.get("tool")), str(event.get("arguments"))


def _checkpoint(event: Event, kind: str, number: object = None) -> bool:
    return (
        event.event == kind
        and event.get("what") == "checkpoint"
        and (number is None or event.get("number") == number)
    )


__all__ = ["batch_durable", "left_out"]
