"""multi-run: three runs in one session; each one's answer depends on the earlier runs' history.

The script reads earlier runs' tool calls and results from the history the runtime
sends (earlier COMPLETED runs of the session). Without that history, run 2 has no city
to compare with and run 3 has nothing to add: their answers differ from the expected.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..conversation import Conversation
from ..scenario import Expected, Scenario
from ..script import Reply
from ..tooling import ToolEnv

POPULATION = {"Lisbon": 545_923, "Porto": 231_800}
INPUTS = (
    "What is the population of Lisbon?",
    "And Porto? Compare it with the city you looked up before.",
    "Add up the populations of every city so far.",
)


def tools(env: ToolEnv) -> list[Callable[..., Any]]:
    def lookup_population(city: str) -> str:
        """The population of a city."""
        return str(POPULATION.get(city, 0))

    def add_numbers(numbers: list[int]) -> str:
        """The sum of a list of integers."""
        return str(sum(numbers))

    return [lookup_population, add_numbers]


def _lookups(conversation: Conversation, *, earlier_runs_only: bool) -> dict[str, int]:
    """City -> population from every lookup in the conversation (or in earlier runs)."""
    items = conversation.items
    if earlier_runs_only:
        last = max((n for n, i in enumerate(items) if i[0] == "user"), default=0)
        items = items[:last]
    history = Conversation(items).turns(since_last_user=False)
    found: dict[str, int] = {}
    for turn in history:
        for call in turn.calls:
            output = turn.output_of(call)
            if call.name == "lookup_population" and output is not None and output.isdigit():
                found[str(call.arguments.get("city"))] = int(output)
    return found


def script(conversation: Conversation) -> Reply:
    turns = conversation.turns()
    question = conversation.last_user
    if question == INPUTS[0] or question == INPUTS[1]:
        city = "Lisbon" if question == INPUTS[0] else "Porto"
        if not turns:
            return Reply.call("lookup_population", city=city)
        output = turns[0].output_of(turns[0].calls[0]) or "?"
        answer = f"{city} has {output} inhabitants."
        if question == INPUTS[0]:
            return Reply.final(answer)
        before = _lookups(conversation, earlier_runs_only=True)
        if not before or not output.isdigit():
            return Reply.final(f"{answer} I have no earlier city to compare it with.")
        other, count = next(iter(before.items()))
        diff = abs(count - int(output))
        more = other if count > int(output) else city
        return Reply.final(f"{answer} {other} has {count}; {more} has {diff} more.")
    if question == INPUTS[2]:
        cities = _lookups(conversation, earlier_runs_only=True)
        if not turns:
            return Reply.call("add_numbers", numbers=list(cities.values()))
        total = turns[0].output_of(turns[0].calls[0]) or "?"
        return Reply.final(f"Together {' and '.join(cities) or 'no cities'} have {total}.")
    return Reply.final(f"I cannot answer {question!r}.")


_L, _P = POPULATION["Lisbon"], POPULATION["Porto"]

SCENARIO = Scenario(
    name="multi-run",
    description="three runs in one session; runs 2 and 3 answer from the earlier runs' "
    "history (tool results included)",
    script=script,
    tools=tools,
    inputs=INPUTS,
    expected=(
        Expected(content=f"Lisbon has {_L} inhabitants.", calls=("lookup_population",)),
        Expected(
            content=f"Porto has {_P} inhabitants. Lisbon has {_L}; Lisbon has {_L - _P} more.",
            calls=("lookup_population",),
        ),
        Expected(content=f"Together Lisbon and Porto have {_L + _P}.", calls=("add_numbers",)),
    ),
)
