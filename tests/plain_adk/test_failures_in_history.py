"""What ADK keeps in a session's history besides the conversation: a model error as an
event of its own (the resume asks the model again, the error stays), and `end_of_agent`
appended after the final answer (the invocation has its answer one write before its last).
The basis of the normal form's `failures` and of a run final before its last write."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plain_adk.app import calls, events, responses
from tests.plain_adk.children import run

pytestmark = pytest.mark.slow


def test_a_model_error_stays_in_history_and_the_resume_asks_again(tmp_path: Path) -> None:
    url, log = f"sqlite+aiosqlite:///{tmp_path / 's.db'}", tmp_path / "log"
    ended = run(url, "start", "inv", log=log, fail_at=2)
    assert ended.startswith("raised: RuntimeError"), ended  # stored, then raised
    stored = events(tmp_path / "s.db")
    assert stored[-1].get("error_code") == "RuntimeError"
    assert run(url, "resume", "inv", log=log, fail_at=2) == "status: done"
    after = events(tmp_path / "s.db")
    errors = [n for n, e in enumerate(after) if e.get("error_code")]
    assert [len(stored) - 1] == errors, "the error event stays where it was"
    assert [i for e in after for i in calls(e)] == ["call-0", "call-1", "call-2"]
    assert [i for e in after for i in responses(e)] == ["call-0", "call-1", "call-2"]
    asked = log.read_text().splitlines()
    assert asked.count("model 2") == 2, "the failed turn was asked again"
