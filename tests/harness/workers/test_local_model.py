# ruff: noqa: SIM300 - tests assert `expected == actual`
"""An adapter that asks for the scripted model at a local address (`local_model = True`)
gets it in every worker: a runtime whose model client is not the openai SDK is driven,
killed and resumed like any other (tests/harness/chat_runtime.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from killpoint.adapters.protocol import local_model
from killpoint.engine.adapter_check import NAMES, PASS, engine_for, run_checks
from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig, runtime_adapter
from killpoint.values.cell import Cell
from killpoint.values.modes import find
from killpoint.values.points import CrashPoint
from killpoint.values.scenario_refs import resolve_scenario

pytestmark = pytest.mark.slow
# A limit, not a measure: a forkserver that imports LiteLLM (seconds) on a loaded machine.
TIMEOUT = 120.0


def checks(runtime: str, tmp_path: Path) -> dict[str, tuple[str, str]]:
    engine = engine_for("sqlite", TIMEOUT, tmp_path)
    adapter = runtime_adapter(runtime)
    row = (runtime, "research", "every-batch", "sqlite")
    found = run_checks(
        engine, row, resolve_scenario("research"), find(adapter.modes, "every-batch")
    )
    return {c.name: (c.status, c.detail) for c in found}


@pytest.mark.parametrize(
    ("name", "client"),
    [("adapter", None), ("litellm_whole", "litellm"), ("anthropic_whole", "anthropic")],
)
def test_a_client_at_the_local_address_passes_check_adapter(
    name: str, client: str | None, tmp_path: Path
) -> None:
    """Chat Completions over plain httpx (which the HTTP mock in the worker does not see),
    through LiteLLM, and the Anthropic Messages API through the anthropic SDK, none of
    them streamed: two baselines, the checkpoints, and a kill after checkpoint 1 resumed
    to the end."""
    if client is not None:
        pytest.importorskip(client)
    found = checks(f"tests.harness.chat_runtime:{name}", tmp_path)
    assert {n: PASS for n in NAMES} == {n: s for n, (s, _) in found.items()}, found


@pytest.mark.parametrize(
    ("name", "kind"),
    [("adapter", "model-500"), ("adapter", "model-timeout"), ("litellm_stream", "model-500")],
)
def test_model_faults_at_the_local_address_end_the_run_in_error_and_it_continues(
    name: str, kind: str, tmp_path: Path
) -> None:
    """The fault kinds on a runtime served at the local address: the run ends ERROR (a 500
    in Chat Completions' shape; a request held unanswered until the connection closes),
    and a fresh worker continues it to the baseline's end."""
    if "litellm" in name:
        pytest.importorskip("litellm")
    engine = Engine(EngineConfig(work_root=tmp_path, keep="none", timeout=TIMEOUT))
    row = (f"tests.harness.chat_runtime:{name}", "research", "every-batch", "sqlite")
    result = engine.run_cell(Cell(*row, schedule=(CrashPoint(kind, 2),)))
    engine.sweep()
    texts = [event[1] for event in result.timeline]
    assert ("ok", True) == (result.verdict, result.expected), result.detail
    assert "acknowledged killpoint-session-run1 ERROR" in texts
    assert texts.index("resumer done") > texts.index("acknowledged killpoint-session-run1 ERROR")


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
