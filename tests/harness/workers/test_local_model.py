# ruff: noqa: SIM300 - tests assert `expected == actual`
"""An adapter that asks for the scripted model at a local address (`local_model = True`)
gets it in every worker: a runtime whose model client is not the openai SDK is driven,
killed and resumed like any other (tests/harness/chat_runtime.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from killpoint.adapters.protocol import local_model
from killpoint.engine.adapter_check import NAMES, PASS, engine_for, run_checks
from killpoint.engine.options import runtime_adapter
from killpoint.values.modes import find
from killpoint.values.scenario_refs import resolve_scenario

pytestmark = pytest.mark.slow


def checks(runtime: str, tmp_path: Path) -> dict[str, tuple[str, str]]:
    engine = engine_for("sqlite", 60.0, tmp_path)
    adapter = runtime_adapter(runtime)
    row = (runtime, "research", "every-batch", "sqlite")
    found = run_checks(
        engine, row, resolve_scenario("research"), find(adapter.modes, "every-batch")
    )
    return {c.name: (c.status, c.detail) for c in found}


def test_plain_httpx_chat_completions_at_the_local_address_passes_check_adapter(
    tmp_path: Path,
) -> None:
    """Chat Completions over plain httpx (which the HTTP mock in the worker does not see):
    two baselines, the checkpoints, and a kill after checkpoint 1 resumed to the end."""
    found = checks("tests.harness.chat_runtime:adapter", tmp_path)
    assert {n: PASS for n in NAMES} == {n: s for n, (s, _) in found.items()}, found


def test_local_model_is_asked_for_only_by_true() -> None:
    class Asks:
        local_model = True

    class Truthy:
        local_model = "yes"

    assert (True, False, False) == (
        local_model(Asks()),
        local_model(Truthy()),
        local_model(object()),
    )
