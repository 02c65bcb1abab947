"""reserve: parallel batches of idempotent reservations that update the session's state,
cancelled while the second batch is asked for.

Three classes each had one scenario of their own (cancel, side-effects-idempotent,
session-state); here they meet in another shape, at little cost (three model turns).
Turn 1 reserves a and b at once, turn 2 reserves c and d at once; the cancel lands
while turn 2 is answered, so the run stops after turn 2's batch: CANCELLED, four
reservations, no turn 3. Each reservation takes the runtime's idempotency key (a call
repeated after a crash under its key has no effect) and counts its item in the session's
state, where every item must be counted once (`state_invariant`).
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from ..conversation import Conversation
from ..scenario import Expected, Scenario
from ..script import Reply, ToolRequest
from ..tooling import ToolEnv, idempotent
from .session_state import tool_state

BATCHES = (("a", "b"), ("c", "d"))
CANCEL_AT_TURN = 2


def tools(env: ToolEnv) -> list[Callable[..., Any]]:
    # The calls of a batch run in threads at once: each update is one step.
    lock = threading.Lock()

    # The key is optional: a runtime that hands out none (agno) still reserves, keyless,
    # and is held to the bound of plain tools instead of to its keys.
    @idempotent
    def reserve(
        item: str, session_state: dict[str, Any], idempotency_key: str | None = None
    ) -> str:
        """Reserve one item of stock, once per idempotency key."""
        with lock:
            counted = session_state.setdefault("reserved", {})
            counted[item] = int(counted.get(item, 0)) + 1
            return f"{item} reserved"

    return [reserve]


def script(conversation: Conversation) -> Reply:
    turns = conversation.turns()
    if len(turns) < len(BATCHES):
        return Reply.batch(*(ToolRequest("reserve", {"item": i}) for i in BATCHES[len(turns)]))
    return Reply.final(f"Reserved {', '.join(i for b in BATCHES for i in b)}.")


def invariant(session: Mapping[str, Any]) -> list[str]:
    """Every reservation counted once: the state's count of each item equals the number
    of `reserve` calls for it in the session's conversation."""
    called: Counter[str] = Counter()
    for run in session.get("runs", {}).values():
        for m in run["messages"]:
            for call in m.get("tool_calls") or ():
                if call["name"] == "reserve":
                    raw = call["arguments"]
                    args = json.loads(raw or "{}") if isinstance(raw, str) else dict(raw or {})
                    called[str(args.get("item"))] += 1
    held = dict(tool_state(session).get("reserved") or {})
    if held != dict(called):
        return [f"the session counts reservations {held} but the runs reserved {dict(called)}"]
    return []


SCENARIO = Scenario(
    name="reserve",
    description="parallel batches of idempotent reservations that update the session state, "
    f"cancelled while model turn {CANCEL_AT_TURN} is asked for: CANCELLED after that batch",
    script=script,
    tools=tools,
    inputs=("Reserve the stock for the order.",),
    expected=(Expected(status="CANCELLED", calls=("reserve",) * 4),),
    cancel_at_turn=CANCEL_AT_TURN,
    state_invariant=invariant,
)
