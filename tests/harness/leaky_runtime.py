"""A runtime that leaks: each worker prints OPENAI_API_KEY and its store URL (stdout and
stderr), and its resumes fail with both in the error. What killpoint shows of it must hold
neither (tests/harness/test_redaction.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from killpoint.adapters.reference import ReferenceAdapter, ReferenceDriver
from killpoint.scenarios import Ledger, Scenario


def leak(store_url: str) -> str:
    return f"key={os.environ.get('OPENAI_API_KEY', '')} store={store_url}"


class LeakyDriver(ReferenceDriver):
    async def resume(
        self, run_id: str, *, session_id: str, confirmations: Mapping[str, bool]
    ) -> Any:
        raise RuntimeError(f"cannot resume: {self.leaked}")


class LeakyAdapter(ReferenceAdapter):
    name = "leaky"
    driver_class = LeakyDriver

    def driver(
        self, scenario: Scenario, store_url: str, mode: str, ledger: Ledger, *, lease_seconds: float
    ) -> ReferenceDriver:
        line = leak(store_url)
        print(line, flush=True)
        print(line, file=sys.stderr, flush=True)
        driver = super().driver(scenario, store_url, mode, ledger, lease_seconds=lease_seconds)
        driver.leaked = line  # type: ignore[attr-defined]
        return driver


LEAKY = LeakyAdapter()
