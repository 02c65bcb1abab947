"""Fixtures of the scenario tests: no armed gates leak between tests, no real API config."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from killpoint.scenarios import gates


@pytest.fixture(autouse=True)
def _clean_process_state(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for var in ("OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID"):
        monkeypatch.delenv(var, raising=False)
    gates.disarm()
    yield
    gates.disarm()
