"""A cancel (`abort_signal`) lives in the process's memory until ADK seals the invocation
with its abort event: a worker killed in between leaves no trace of it, and a resume
finishes the invocation the user cancelled."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plain_adk.app import STEPS, events, text
from tests.plain_adk.children import Child, run

pytestmark = pytest.mark.slow


def test_a_cancel_asked_before_a_kill_is_forgotten(tmp_path: Path) -> None:
    url, log = f"sqlite+aiosqlite:///{tmp_path / 's.db'}", tmp_path / "log"
    worker = Child(url, "start", "inv", log=log, abort_at=2, hold_at=2)
    worker.until("ready")
    worker.go()
    assert worker.until("held") == "held"  # the cancel was asked; ADK has not sealed yet
    worker.kill()
    killed = events(tmp_path / "s.db")
    assert not any(e.get("error_code") for e in killed), "no abort event landed"
    assert run(url, "resume", "inv", log=log) == "status: done"
    after = events(tmp_path / "s.db")
    assert not any(e.get("error_code") for e in after)
    assert f"done after {STEPS} steps" == text(after[-2]), "the cancelled job finished"
    assert [f"step {n}" for n in range(STEPS)] == [
        line for line in log.read_text().splitlines() if line.startswith("step")
    ]
