"""A user's own agent, twice: its prompt before and after an edit, and a variant whose fetch
says how often it ran (a tool whose result changes when a crash makes it run again). Each is
the reference runtime's Agent with tools of its own, marked `killpoint.effect`."""

from __future__ import annotations

import json
from typing import Any

from killpoint import agent_adapter, effect, intent
from killpoint.runtime import Agent
from killpoint.scenarios.effects import current_ledger


@effect
def search(query: str) -> str:
    """Search the web and return the ids of the top results."""
    return json.dumps({"query": query, "results": ["r1", "r2", "r3"]})


@effect
@intent("result_id")
def fetch_detail(result_id: str) -> str:
    """Fetch the full text of one search result."""
    return f"Full text of {result_id}: findings about the query."


def _counting_fetch() -> Any:
    @effect
    def fetch_detail(result_id: str) -> str:
        """Fetch the full text of one search result (it says how often it was fetched)."""
        ledger = current_ledger()
        wanted = json.dumps({"result_id": result_id}, separators=(",", ":"))
        runs = [
            e
            for e in (ledger.entries() if ledger is not None else ())
            if e.phase == "started" and e.arguments == wanted
        ]
        return f"Full text of {result_id}, fetch number {len(runs)}."

    return fetch_detail


COUNTED_FETCH = _counting_fetch()


def _agent(prompt: str, own: list[Any], given: dict[str, Any]) -> Agent:
    """The runtime's agent with what is the user's: its prompt and its tools (killpoint
    passes the model, the store and the mode)."""
    return Agent(**{**given, "tools": own, "instructions": prompt})


@agent_adapter
def brief(**kwargs: Any) -> Agent:
    return _agent("Be brief.", [search, fetch_detail], kwargs)


@agent_adapter
def thorough(**kwargs: Any) -> Agent:
    """`brief` after an edit of its prompt."""
    return _agent("Be thorough.", [search, fetch_detail], kwargs)


@agent_adapter
def counting(**kwargs: Any) -> Agent:
    return _agent("Be brief.", [search, COUNTED_FETCH], kwargs)
