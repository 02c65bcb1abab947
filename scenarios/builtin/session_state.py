"""session-state: tools that update the session's state, over two runs of one session.

`tally` adds one to a counter and says the new total; `note` appends its text to a list.
Run 1 tallies four fruits (one turn has `tally` and `note` in one batch); run 2 tallies
one more on top of run 1's state and notes it. Whatever happened to the runs (crashed,
resumed, taken over), every update must be applied exactly once: the counter equals the
number of `tally` calls in the session's runs, and the notes are the `note` arguments in
the order the calls were made (`state_invariant`). A runtime that writes the state only at
the end loses it in a crash; one that writes it apart from the tool results applies an
update twice after a crash between the two writes (the totals, and so the answers, drift).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from typing import Any

from ..conversation import Conversation
from ..scenario import Expected, Scenario
from ..script import Reply, ToolRequest
from ..tooling import ToolEnv

INPUTS = ("Tally apple, pear, fig and plum, and note what you see.", "Tally kiwi too.")
RUN_1 = (("apple", None), ("pear", "pear is ripe"), ("fig", None), ("plum", None))
RUN_2 = (("kiwi", "kiwi came last"),)


def tools(env: ToolEnv) -> list[Callable[..., Any]]:
    # Tools of one batch may run in threads at once: each update is one step.
    lock = threading.Lock()

    def tally(item: str, session_state: dict[str, Any]) -> str:
        """Count one item in the session's tally; returns the new total."""
        with lock:
            session_state["count"] = int(session_state.get("count", 0)) + 1
            return f"{item} tallied ({session_state['count']} so far)"

    def note(text: str, session_state: dict[str, Any]) -> str:
        """Add a note to the session's notes."""
        with lock:
            session_state.setdefault("notes", []).append(text)
            return f"noted: {text}"

    return [tally, note]


def _step(item: str, text: str | None) -> Reply:
    if text is None:
        return Reply.call("tally", item=item)
    return Reply.batch(ToolRequest("tally", {"item": item}), ToolRequest("note", {"text": text}))


def script(conversation: Conversation) -> Reply:
    turns = conversation.turns()
    steps = RUN_1 if conversation.last_user == INPUTS[0] else RUN_2
    if len(turns) < len(steps):
        return _step(*steps[len(turns)])
    last = turns[-1]
    total = next((last.output_of(c) for c in last.calls if c.name == "tally"), None) or "?"
    return Reply.final(f"Tallied {', '.join(i for i, _ in steps)}: {total}.")


def tool_state(session: Mapping[str, Any]) -> Mapping[str, Any]:
    """The state the tools wrote, in a session's normal form: the reference runtime's
    session state is that dict; agno keeps it under `session_state` in its session data
    (beside its session metrics)."""
    state = session.get("state") or {}
    inner = state.get("session_state") if isinstance(state, Mapping) else None
    return inner if isinstance(inner, Mapping) else state


def _arguments(raw: Any) -> dict[str, Any]:
    return json.loads(raw or "{}") if isinstance(raw, str) else dict(raw or {})


def invariant(session: Mapping[str, Any]) -> list[str]:
    """Every update applied once: the counter is the number of `tally` calls in the
    session's conversation; the notes are the `note` texts, in the order they were called.
    (Read from the messages: a run whose tool-execution records were lost still holds
    its calls and their answers there.)"""
    tallies, notes = 0, []
    for run in session.get("runs", {}).values():
        for m in run["messages"]:
            for call in m.get("tool_calls") or ():
                if call["name"] == "tally":
                    tallies += 1
                elif call["name"] == "note":
                    notes.append(_arguments(call["arguments"]).get("text"))
    state = tool_state(session)
    problems = []
    count = state.get("count", 0)
    if count != tallies:
        problems.append(
            f"the session's count is {count} but its runs called tally {tallies} "
            + ("time" if tallies == 1 else "times")
        )
    held = list(state.get("notes", []))
    if held != notes:
        problems.append(f"the session's notes are {held} but the note calls were {notes}")
    return problems


def _final(steps: tuple[tuple[str, str | None], ...], total: int) -> str:
    return f"Tallied {', '.join(i for i, _ in steps)}: {steps[-1][0]} tallied ({total} so far)."


SCENARIO = Scenario(
    name="session-state",
    description="two runs of one session whose tools update its state (a counter, a list "
    "appended per call); each update must be applied exactly once",
    script=script,
    tools=tools,
    inputs=INPUTS,
    expected=(
        Expected(content=_final(RUN_1, 4), calls=("tally", "tally", "note", "tally", "tally")),
        Expected(content=_final(RUN_2, 5), calls=("tally", "note")),
    ),
    state_invariant=invariant,
)
