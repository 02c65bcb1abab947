"""ADK's warm-up in the forkserver (killpoint.workers.warm)."""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from pathlib import Path

from killpoint.adapters.adk import import_problem


def warm_up() -> None:
    """ADK's first run in a process costs seconds (LiteLLM's and ADK's lazy imports,
    pydantic schemas, the function declarations): run `research` once here, when the
    forkserver preloaded ADK's adapter (an ADK campaign), against the scripted model at a
    local address, then drop every client LiteLLM cached (bound to this event loop, they
    would be dead in a forked worker)."""
    if import_problem() is not None:
        return
    import litellm

    from killpoint import scenarios
    from killpoint.adapters.adk.agent import AdkDriver
    from killpoint.scenarios import Ledger, ScriptedModel, drive
    from killpoint.scenarios.model_server import serve

    scenario = scenarios.get("research")
    tmp = Path(tempfile.mkdtemp(prefix="killpoint-warm-adk-"))

    async def run() -> None:
        driver = AdkDriver(scenario, f"sqlite:///{tmp}/warm.db", Ledger(tmp / "ledger", "research"))
        try:
            with ScriptedModel(scenario.script, tmp / "model") as model:
                await drive(scenario, driver, model, session_id="warm")
        finally:
            await driver.close()

    try:
        with serve(ScriptedModel(scenario.script, tmp / "model")):
            asyncio.run(run())
    finally:
        litellm.in_memory_llm_clients_cache.flush_cache()
        shutil.rmtree(tmp, ignore_errors=True)
