"""LangGraph's warm-up in the forkserver (killpoint.workers.warm)."""

from __future__ import annotations

from typing import Any

from killpoint.adapters.langgraph import import_problem
from killpoint.adapters.warm_run import MakeDriver, warm_research


def warm_up() -> None:
    """LangGraph's first run in a process costs the better part of a second (lazy imports,
    pydantic models of messages and tools, the graph's compilation): run `research` once
    with a task per batch and once with a `Send` per call, when the forkserver preloaded
    LangGraph's adapter (a LangGraph campaign). The driver's connection thread is closed
    before the forkserver forks."""
    if import_problem() is not None:
        return
    from killpoint.adapters.langgraph.agent import LangGraphDriver

    def style(send: bool) -> MakeDriver:
        return lambda scenario, url, ledger: LangGraphDriver(
            scenario, url, "sync", ledger, send=send
        )

    async def close(driver: Any) -> None:
        await driver.aclose()

    warm_research("killpoint-warm-langgraph-", [style(False), style(True)], close)
