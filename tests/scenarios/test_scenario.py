# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Defining a scenario: validation, and a user-defined one runs like a built-in."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from killpoint.scenarios import Conversation, Expected, Reply, Scenario, ToolEnv

from .support import calls_of, run_scenario


def my_tools(env: ToolEnv) -> list[Callable[..., Any]]:
    def double(n: int) -> str:
        """Double a number."""
        return str(2 * n)

    return [double]


def my_script(conversation: Conversation) -> Reply:
    turns = conversation.turns()
    if not turns:
        return Reply.call("double", n=21)
    return Reply.final(f"The answer is {turns[0].output_of(turns[0].calls[0])}.")


def test_a_user_defined_scenario_runs_like_a_builtin(tmp_path: Path) -> None:
    """A scenario written in user code with the public API runs on the reference runtime."""
    sc = Scenario(
        name="mine",
        description="doubles 21",
        script=my_script,
        tools=my_tools,
        expected=(Expected(content="The answer is 42.", calls=("double",)),),
    )
    out = run_scenario(sc, tmp_path, "tool")
    assert ("COMPLETED", "The answer is 42.", ("double",)) == (
        out.results[0].status,
        out.results[0].content,
        calls_of(out.runs[0]),
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"inputs": ()}, "at least one input"),
        ({"inputs": ("a", "b")}, "one Expected per input"),
    ],
)
def test_bad_definitions_are_refused(kwargs: dict[str, Any], message: str) -> None:
    """No inputs, or an Expected count that does not match: ValueError."""
    with pytest.raises(ValueError, match=message):
        Scenario(name="bad", description="", script=my_script, tools=my_tools, **kwargs)
