"""One run of `research` per driver variant, in the forkserver before it forks: what every
built-in runtime's warm-up does (killpoint.adapters.registry names each `warm_up`).

A variant makes its driver inside the event loop that runs it, and `close` ends what the
driver started (connections, threads) before the next variant and before any fork.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import shutil
import tempfile
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from killpoint.scenarios import Ledger, Scenario

# (scenario, store URL, ledger) -> a driver
MakeDriver = Callable[[Scenario, str, Ledger], Any]


def warm_research(
    prefix: str,
    variants: Sequence[MakeDriver],
    close: Callable[[Any], Awaitable[None] | None],
    *,
    local_model: bool = False,
) -> None:
    """`local_model`: the runtime's adapter asks for the scripted model at a local address
    (its base URL in the environment while each variant is made and run); the server and
    its threads are gone, the environment as it was, before this returns."""
    from killpoint import scenarios
    from killpoint.scenarios import ScriptedModel, drive
    from killpoint.scenarios.model_server import serve

    scenario = scenarios.get("research")
    tmp = Path(tempfile.mkdtemp(prefix=prefix))

    async def run(n: int, make: MakeDriver, model: ScriptedModel) -> None:
        driver = make(
            scenario, f"sqlite:///{tmp}/warm{n}.db", Ledger(tmp / f"ledger{n}", scenario.name)
        )
        try:
            with model:
                await drive(scenario, driver, model, session_id="warm")
        finally:
            closing = close(driver)
            if inspect.isawaitable(closing):
                await closing

    try:
        for n, make in enumerate(variants):
            model = ScriptedModel(scenario.script, tmp / f"model{n}")
            with serve(model) if local_model else contextlib.nullcontext():
                asyncio.run(run(n, make, model))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
