"""The forkserver's warm-up run of `research`: with `local_model`, a runtime whose model
client is not the openai SDK's is served at a local address while it warms up, and the
forkserver is left with no server thread and its environment as it was (it forks next)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from killpoint import Ledger, Scenario, ToolEnv
from killpoint.adapters.warm_run import warm_research
from killpoint.scenarios.model_server import URL_VARIABLE
from killpoint.stores.sqlite import path_of
from tests.harness.chat_runtime import ChatAgent
from tests.harness.json_file_runtime import JsonDriver, JsonStore


def test_a_local_model_warm_up_runs_and_leaves_nothing_behind() -> None:
    seen: dict[str, Any] = {}
    before = set(threading.enumerate())

    def make(scenario: Scenario, url: str, ledger: Ledger) -> JsonDriver:
        seen["url"] = os.environ.get(URL_VARIABLE)
        store = JsonStore(Path(path_of(url)).parent, None, "atomic")
        store.create()
        seen["store"] = store
        tools = scenario.build_tools(ToolEnv(ledger))
        # Plain httpx at OPENAI_BASE_URL: only the local address can answer it.
        return JsonDriver(ChatAgent(store, tools, "every-batch", 0, "httpx"))

    def close(driver: JsonDriver) -> None:
        seen["status"] = {r["status"] for r in seen["store"].runs().values()}

    warm_research("killpoint-test-warm-", [make], close, local_model=True)
    assert str(seen["url"]).startswith("http://127.0.0.1:")
    assert {"COMPLETED"} == seen["status"]
    assert URL_VARIABLE not in os.environ
    assert set() == set(threading.enumerate()) - before
