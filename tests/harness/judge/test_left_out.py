# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Calls a checkpoint of their finished batch left out (killpoint.judge.left_out), read
from histories as workers write them: only a checkpoint begun once the whole batch had
returned, and landed, leaves a call out; one begun while a call of the batch ran, one that
never landed, or none before the next model turn, does not."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import pytest

from killpoint.judge.left_out import batch_durable, left_out
from killpoint.scenarios.history import Event
from killpoint.values.modes import RUNS, TOOL, TOOL_BATCH

CHARGE = ("charge_card", '{"amount_cents":1999}')
EMAIL = ("send_email", '{"to":"ana@example.com"}')
FLIGHT = Counter([CHARGE, EMAIL])


def history(*events: tuple[str, dict[str, Any]], pid: int = 7) -> list[Event]:
    return [Event(n, name, pid, float(n), data) for n, (name, data) in enumerate(events)]


def reply(*calls: tuple[str, str]) -> tuple[str, dict[str, Any]]:
    return "model-reply", {"turn": 1, "calls": [list(c) for c in calls]}


def effect(call: tuple[str, str], done: bool = False) -> tuple[str, dict[str, Any]]:
    return ("effect-done" if done else "effect"), {"tool": call[0], "arguments": call[1]}


def checkpoint(number: int, event: str = "write") -> tuple[str, dict[str, Any]]:
    return event, {"what": "checkpoint", "number": number}


def test_a_checkpoint_begun_after_the_whole_batch_returned_left_it_out() -> None:
    events = history(
        reply(CHARGE, EMAIL),
        effect(CHARGE), effect(EMAIL), effect(CHARGE, True), effect(EMAIL, True),
        checkpoint(2), checkpoint(2, "committed"),
    )  # fmt: skip
    assert {CHARGE: 2, EMAIL: 2} == left_out(events, FLIGHT, [], 9)


def test_a_checkpoint_begun_while_a_call_of_the_batch_ran_leaves_nothing_out() -> None:
    """A write in the middle of a batch (a call's own, or a lease's) is not the batch's."""
    events = history(
        reply(CHARGE, EMAIL),
        effect(CHARGE), effect(EMAIL), effect(CHARGE, True),
        checkpoint(2), checkpoint(2, "committed"), effect(EMAIL, True),
    )  # fmt: skip
    assert {} == left_out(events, FLIGHT, [], 9)


@pytest.mark.parametrize(
    "after",
    [
        [checkpoint(2)],  # begun, never landed: the crash came inside it
        [("model-request", {"turn": 2}), checkpoint(2), checkpoint(2, "committed")],
        [("write", {"what": "reply", "number": 2}), ("committed", {"what": "reply"})],
    ],
)
def test_no_landed_checkpoint_of_the_batch_leaves_nothing_out(
    after: list[tuple[str, dict[str, Any]]],
) -> None:
    events = history(reply(CHARGE), effect(CHARGE), effect(CHARGE, True), *after)
    assert {} == left_out(events, Counter([CHARGE]), [], 9)


def test_a_checkpoint_the_store_no_longer_holds_left_nothing_out() -> None:
    """A power cut took back checkpoint 2, which had landed holding the batch's results:
    the store holds 1 checkpoint, and what the cut took is `checkpoints-lost`'s."""
    events = history(
        reply(CHARGE), effect(CHARGE), effect(CHARGE, True),
        checkpoint(2), checkpoint(2, "committed"),
    )  # fmt: skip
    assert {} == left_out(events, Counter([CHARGE]), [], 1)
    assert {CHARGE: 2} == left_out(events, Counter([CHARGE]), [], 2)


def test_only_calls_in_flight_and_only_the_workers_own_checkpoints() -> None:
    """A call whose result is durable is not asked about; another worker's checkpoint
    (a resumer's, after a first crash) says nothing of this worker's batch."""
    mine = history(reply(CHARGE), effect(CHARGE), effect(CHARGE, True))
    theirs = [
        replace(e, n=e.n + 10, pid=8) for e in history(checkpoint(5), checkpoint(5, "committed"))
    ]
    assert {} == left_out([*mine, *theirs], Counter([CHARGE]), [], 9)
    done = history(
        reply(CHARGE),
        effect(CHARGE),
        effect(CHARGE, True),
        checkpoint(1),
        checkpoint(1, "committed"),
    )
    assert {} == left_out(done, Counter([EMAIL]), [], 9)


def test_only_modes_that_keep_a_batchs_results_with_it_are_held_to_it() -> None:
    assert batch_durable(TOOL_BATCH)
    assert not batch_durable(TOOL)  # each call's own checkpoint: a batch's race
    assert not batch_durable(RUNS)  # nothing mid-run
    assert not batch_durable(replace(TOOL_BATCH, writes_lag=True))
    assert not batch_durable(replace(TOOL_BATCH, tool_results_durable=False))
    assert not batch_durable(None)
