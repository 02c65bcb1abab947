"""Warm the forkserver, so that every worker forked from it starts hot.

Importing this module (the forkserver preloads it) runs one scripted scenario end
to end in a throwaway directory: the openai SDK, pydantic, SQLAlchemy and respx
do their lazy first-use work once here instead of once per worker. Everything it
starts is stopped again before the forkserver forks: no threads, pools or respx
patches survive into a child. One shared TLS context does (harness/tls.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import shutil
import sys
import tempfile
from pathlib import Path

from .tls import share_tls_context


def _run_once() -> None:
    from killpoint import scenarios
    from killpoint.scenarios import Ledger, ScriptedModel, drive

    from .adapters.reference import ReferenceDriver

    scenario = scenarios.get("research")
    tmp = Path(tempfile.mkdtemp(prefix="killpoint-warm-"))
    try:
        driver = ReferenceDriver(
            scenario, f"sqlite:///{tmp}/warm.db", "tool", Ledger(tmp / "ledger", scenario.name)
        )
        with ScriptedModel(scenario.script, tmp / "model") as model:
            asyncio.run(drive(scenario, driver, model, session_id="warm"))
        driver.agent.db.dispose()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run_agno_once() -> None:
    """agno's first run in a process costs over a second (lazy imports, pydantic schemas,
    SQLAlchemy table metadata); run `research` once per conversation style here, when
    the forkserver preloaded agno's adapter (an agno campaign)."""
    if "killpoint.adapters.agno" not in sys.modules:
        return
    from killpoint import scenarios
    from killpoint.scenarios import Ledger, ScriptedModel, drive

    from .adapters.agno import CHAINED_MODEL_ID, TRANSCRIPT_MODEL_ID, AgnoDriver, import_problem

    if import_problem() is not None:
        return
    scenario = scenarios.get("research")
    tmp = Path(tempfile.mkdtemp(prefix="killpoint-warm-agno-"))
    try:
        for n, model_id in enumerate((TRANSCRIPT_MODEL_ID, CHAINED_MODEL_ID)):
            driver = AgnoDriver(
                scenario,
                f"sqlite:///{tmp}/warm{n}.db",
                "tool-batch",
                Ledger(tmp / f"ledger{n}", scenario.name),
                model_id=model_id,
            )
            try:
                with ScriptedModel(scenario.script, tmp / f"model{n}") as model:
                    asyncio.run(drive(scenario, driver, model, session_id="warm"))
            finally:
                driver.dispose()
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _run_langgraph_once() -> None:
    """LangGraph's first run in a process costs the better part of a second (lazy imports,
    pydantic models of messages and tools, the graph's compilation): run `research` once
    with a task per batch and once with a `Send` per call, when the forkserver preloaded
    LangGraph's adapter (a LangGraph campaign). The driver's connection thread is closed
    before the forkserver forks."""
    if "killpoint.adapters.langgraph" not in sys.modules:
        return
    from killpoint import scenarios
    from killpoint.scenarios import Ledger, ScriptedModel, drive

    from .adapters.langgraph import import_problem

    if import_problem() is not None:
        return
    from .adapters.langgraph.agent import LangGraphDriver

    scenario = scenarios.get("research")
    tmp = Path(tempfile.mkdtemp(prefix="killpoint-warm-langgraph-"))

    async def run(n: int, send: bool) -> None:
        driver = LangGraphDriver(
            scenario,
            f"sqlite:///{tmp}/warm{n}.db",
            "sync",
            Ledger(tmp / f"ledger{n}", scenario.name),
            send=send,
        )
        try:
            with ScriptedModel(scenario.script, tmp / f"model{n}") as model:
                await drive(scenario, driver, model, session_id="warm")
        finally:
            await driver.aclose()

    try:
        for n, send in enumerate((False, True)):
            asyncio.run(run(n, send))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def warm() -> None:
    share_tls_context()
    # A failed warm-up costs speed, never correctness.
    with contextlib.suppress(Exception):
        _run_once()
    with contextlib.suppress(Exception):
        _run_agno_once()
    with contextlib.suppress(Exception):
        _run_langgraph_once()
    # Everything loaded so far lives as long as the forkserver: keep the collector from
    # walking (and copy-on-write touching) it again in every forked worker. No collect()
    # first: the garbage it would free would leave holes that every child's allocations
    # fill, copying the page each time (killpoint.forkserver_gc).
    gc.freeze()


warm()
