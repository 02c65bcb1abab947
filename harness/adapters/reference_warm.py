"""The reference runtime's warm-up in the forkserver (killpoint.workers.warm)."""

from __future__ import annotations

from typing import Any

from killpoint.adapters.reference import ReferenceDriver
from killpoint.adapters.warm_run import warm_research


def warm_up() -> None:
    """Run `research` once in this process (the forkserver): the openai SDK, pydantic,
    SQLAlchemy and respx do their lazy first-use work here instead of in every worker."""

    def dispose(driver: Any) -> None:
        driver.agent.db.dispose()

    warm_research(
        "killpoint-warm-",
        [lambda scenario, url, ledger: ReferenceDriver(scenario, url, "tool", ledger)],
        dispose,
    )
