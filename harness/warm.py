"""Warm the forkserver, so that every worker forked from it starts hot.

Importing this module (the forkserver preloads it) runs one scripted scenario end
to end in a throwaway directory: the openai SDK, pydantic, SQLAlchemy and respx
do their lazy first-use work once here instead of once per worker. Everything it
starts is stopped again before the forkserver forks: no threads, pools or patches
survive into a child.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import gc
import shutil
import tempfile
from pathlib import Path

import httpcore2


def _cache_tls_context() -> None:
    # Every openai client builds a TLS context, loading the system CA bundle (~50 ms).
    # Workers never open a socket (the scripted model answers in-process), so one
    # shared context, built once, is as good as a fresh one each time.
    if not hasattr(httpcore2.default_ssl_context, "cache_info"):
        httpcore2.default_ssl_context = functools.cache(httpcore2.default_ssl_context)


def _run_once() -> None:
    import scenarios
    from scenarios import Ledger, ScriptedModel, drive

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


def warm() -> None:
    _cache_tls_context()
    # A failed warm-up costs speed, never correctness.
    with contextlib.suppress(Exception):
        _run_once()
    # Everything loaded so far lives as long as the forkserver: keep the collector from
    # walking (and copy-on-write touching) it again in every forked worker.
    gc.collect()
    gc.freeze()


warm()
