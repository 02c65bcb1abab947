"""A runtime that leaks: each worker prints OPENAI_API_KEY and its store URL (stdout and
stderr) and an 8 MiB line, and its resumes fail with both and escape sequences in the error. What killpoint shows of it must hold
neither (tests/harness/test_redaction.py)."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import Any

from killpoint.adapters.reference import ReferenceAdapter, ReferenceDriver
from killpoint.scenarios import Ledger, Scenario

# What a terminal must never receive raw: a window title, a clipboard write, clear screen,
# an OSC 8 link.
ESCAPES = "\x1b]0;pwned\x07 \x1b]52;c;ZXZpbA==\x07 \x1b[2J \x1b]8;;https://x.example\x1b\\link\x1b]8;;\x1b\\"
BIG = 8 * 1024 * 1024  # one stderr line of 8 MiB


def leak(store_url: str) -> str:
    return f"key={os.environ.get('OPENAI_API_KEY', '')} store={store_url}"


class LeakyDriver(ReferenceDriver):
    async def resume(
        self, run_id: str, *, session_id: str, confirmations: Mapping[str, bool]
    ) -> Any:
        raise RuntimeError(f"cannot resume: {self.leaked} {ESCAPES}")


class LeakyAdapter(ReferenceAdapter):
    name = "leaky"
    driver_class = LeakyDriver

    def driver(
        self, scenario: Scenario, store_url: str, mode: str, ledger: Ledger, *, lease_seconds: float
    ) -> ReferenceDriver:
        line = leak(store_url)
        print(line, flush=True)
        print(line, file=sys.stderr, flush=True)
        print("x" * BIG, file=sys.stderr, flush=True)
        driver = super().driver(scenario, store_url, mode, ledger, lease_seconds=lease_seconds)
        driver.leaked = line  # type: ignore[attr-defined]
        return driver


LEAKY = LeakyAdapter()
