"""cancel: a six-step job cancelled when the model is asked for turn 3 (CANCELLED; no continue)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..conversation import Conversation
from ..scenario import Expected, Scenario
from ..script import Reply
from ..tooling import ToolEnv

STEPS = 6
CANCEL_AT_TURN = 3


def tools(env: ToolEnv) -> list[Callable[..., Any]]:
    def process_batch(batch: int) -> str:
        """Process one batch of the nightly import."""
        return f"batch {batch} imported"

    return [process_batch]


def script(conversation: Conversation) -> Reply:
    turns = conversation.turns()
    if len(turns) < STEPS:
        return Reply.call("process_batch", batch=len(turns) + 1)
    return Reply.final(f"Imported {STEPS} batches.")


SCENARIO = Scenario(
    name="cancel",
    description=f"a {STEPS}-step job cancelled when model turn {CANCEL_AT_TURN} is requested: "
    "ends CANCELLED after that turn's batch; continuing is refused",
    script=script,
    tools=tools,
    inputs=("Run the nightly import.",),
    # The cancel lands while turn 3 is answered; the run stops at the next step boundary,
    # after turn 3's batch: three calls, no final message.
    expected=(Expected(status="CANCELLED", calls=("process_batch",) * CANCEL_AT_TURN),),
    cancel_at_turn=CANCEL_AT_TURN,
)
