"""research: search, then fetch each of 3 results one at a time, then summarise."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from ..conversation import Conversation
from ..scenario import Expected, Scenario
from ..script import Reply
from ..tooling import ToolEnv

RESULTS = ("r1", "r2", "r3")
SUMMARY = "Summary: r1, r2 and r3 all say the same thing."


def tools(env: ToolEnv) -> list[Callable[..., Any]]:
    def search(query: str) -> str:
        """Search the web and return the ids of the top results."""
        return json.dumps({"query": query, "results": list(RESULTS)})

    def fetch_detail(result_id: str) -> str:
        """Fetch the full text of one search result."""
        return f"Full text of {result_id}: findings about the query."

    return [search, fetch_detail]


def script(conversation: Conversation) -> Reply:
    turns = conversation.turns()
    if not turns:
        return Reply.call("search", query=conversation.last_user)
    fetched = len(turns) - 1
    if fetched < len(RESULTS):
        return Reply.call("fetch_detail", result_id=RESULTS[fetched])
    return Reply.final(SUMMARY)


SCENARIO = Scenario(
    name="research",
    description="search, then fetch each of 3 results one at a time, then summarise "
    "(5 model turns, 4 tool batches)",
    script=script,
    tools=tools,
    inputs=("Research crash consistency of agent runtimes.",),
    expected=(Expected(content=SUMMARY, calls=("search", *["fetch_detail"] * 3)),),
    # A model that re-plans the lookup asks it in other words (behaviours.py, `replan`).
    replan={"search": lambda a: {**a, "query": f"Find sources on: {a.get('query', '')}"}},
)
