"""run_async(invocation_id=<an invocation that ended>) runs it again: a COMPLETED invocation
asks the model once more and appends a second final answer; an aborted one is revived and
completes. Each in a fresh process, as a resume after a crash is."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.plain_adk.app import STEPS, events, text
from tests.plain_adk.children import run

pytestmark = pytest.mark.slow


def answers(db: Path) -> list[str]:
    return [t for e in events(db) if e.get("author") != "user" and (t := text(e))]


def test_resuming_a_completed_invocation_asks_the_model_again(tmp_path: Path) -> None:
    url, log = f"sqlite+aiosqlite:///{tmp_path / 's.db'}", tmp_path / "log"
    assert run(url, "start", "inv", log=log) == "status: done"
    before = events(tmp_path / "s.db")
    assert (
        before[-1]["actions"].get("end_of_agent")
        and text(before[-2]) == f"done after {STEPS} steps"
    )
    assert log.read_text().count("model ") == STEPS + 1
    assert run(url, "resume", "inv", log=log) == "status: done"
    assert log.read_text().count("model ") == STEPS + 2, (
        "the ended invocation asked the model again"
    )
    assert [f"done after {STEPS} steps"] * 2 == answers(tmp_path / "s.db")


def test_resuming_an_aborted_invocation_revives_it_to_a_final_answer(tmp_path: Path) -> None:
    url, log = f"sqlite+aiosqlite:///{tmp_path / 's.db'}", tmp_path / "log"
    assert run(url, "start", "inv", log=log, abort_at=2) == "status: done"
    sealed = events(tmp_path / "s.db")
    assert sealed[-1].get("error_code") == "INVOCATION_ABORTED", sealed[-1]
    assert answers(tmp_path / "s.db") == []
    assert run(url, "resume", "inv", log=log) == "status: done"
    after = events(tmp_path / "s.db")
    assert any(e.get("error_code") == "INVOCATION_ABORTED" for e in after)
    assert [f"done after {STEPS} steps"] == answers(tmp_path / "s.db"), "revived to an answer"
