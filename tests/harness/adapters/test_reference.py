"""The reference runtime's adapter: its two conversation styles, side by side."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

from killpoint import scenarios
from killpoint.adapters.reference import ReferenceAdapter
from killpoint.adapters.registry import load_adapter
from killpoint.judge.oracle import comparable
from killpoint.scenarios import Ledger, ScriptedModel, drive


def run_in_process(
    adapter: ReferenceAdapter, name: str, mode: str, tmp_path: Path
) -> tuple[dict[str, Any] | None, list[dict[str, Any]]]:
    """The scenario to its end in this process: the stored session and the requests sent
    (with the status each got)."""
    scenario = scenarios.get(name)
    url = f"sqlite:///{tmp_path / 'store.db'}"
    ledger = Ledger(tmp_path / "ledger.jsonl", scenario.name)
    driver = adapter.driver(scenario, url, mode, ledger, lease_seconds=30.0)
    model = ScriptedModel(
        scenario.script, tmp_path / "model", faults=scenario.faults, record_traffic=True
    )
    try:
        with model:
            asyncio.run(drive(scenario, driver, model, session_id="s"))
    finally:
        driver.agent.db.dispose()
    traffic = [{**json.loads(body), "status": status} for body, status, _ in model.traffic]
    return adapter.read_session(url, "s"), traffic


@pytest.mark.parametrize("name", ["research", "multi-run", "flaky-model"])
def test_chained_and_transcript_store_the_same_session(name: str, tmp_path: Path) -> None:
    """The default chains turns with previous_response_id, each request carrying only the
    tool outputs (or the next run's user message) after the last response; `transcript`
    resends everything. What the runtime stores is the same either way."""
    chained_session, chained = run_in_process(
        load_adapter("reference"), name, "tool-batch", tmp_path / "c"
    )
    whole_session, whole = run_in_process(
        load_adapter("killpoint.adapters.reference:transcript"), name, "tool-batch", tmp_path / "t"
    )

    assert comparable(whole_session) == comparable(chained_session)
    assert len(whole) == len(chained)
    # Chained from the first answered request on (a request retried after a 429 or a 500
    # before any answer has nothing to chain to).
    answered = next(n for n, b in enumerate(chained) if b["status"] == 200)
    assert all("previous_response_id" not in b for b in chained[: answered + 1])
    assert all(b["previous_response_id"].startswith("resp_") for b in chained[answered + 1 :])
    assert all("previous_response_id" not in b for b in whole)
    # The transcript grows with every turn; a chained request stays small.
    assert max(len(b["input"]) for b in chained) < max(len(b["input"]) for b in whole)
    assert [len(b["input"]) for b in whole] == sorted(len(b["input"]) for b in whole)
