"""agno's warm-up in the forkserver (killpoint.workers.warm)."""

from __future__ import annotations

from typing import Any

from killpoint.adapters.agno import import_problem
from killpoint.adapters.agno.driver import CHAINED_MODEL_ID, TRANSCRIPT_MODEL_ID, AgnoDriver
from killpoint.adapters.warm_run import MakeDriver, warm_research


def warm_up() -> None:
    """agno's first run in a process costs over a second (lazy imports, pydantic schemas,
    SQLAlchemy table metadata); run `research` once per conversation style here, when
    the forkserver preloaded agno's adapter (an agno campaign)."""
    if import_problem() is not None:
        return

    def style(model_id: str) -> MakeDriver:
        return lambda scenario, url, ledger: AgnoDriver(
            scenario, url, "tool-batch", ledger, model_id=model_id
        )

    def dispose(driver: Any) -> None:
        driver.dispose()

    warm_research(
        "killpoint-warm-agno-", [style(TRANSCRIPT_MODEL_ID), style(CHAINED_MODEL_ID)], dispose
    )
