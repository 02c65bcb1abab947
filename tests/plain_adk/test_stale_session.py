"""ADK refuses the later of two writers: a session loaded before another writer appended is
refused with StaleSessionError, and the store keeps the first writer's history. What a
takeover meets when the paused worker it replaced woke and wrote first (`takeover-refused`)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from google.adk.errors._stale_session_error import StaleSessionError
from google.adk.events.event import Event
from google.genai import types

from tests.plain_adk.app import APP, USER, build, events, text


def test_the_later_of_two_writers_is_refused(tmp_path: Path) -> None:
    url = f"sqlite+aiosqlite:///{tmp_path / 's.db'}"

    async def main() -> None:
        _, first = build(url)
        _, second = build(url)  # another engine: another process's view of the store
        await first.create_session(app_name=APP, user_id=USER, session_id="s")
        mine = await first.get_session(app_name=APP, user_id=USER, session_id="s")
        theirs = await second.get_session(app_name=APP, user_id=USER, session_id="s")
        assert mine is not None and theirs is not None

        def said(words: str) -> Event:
            content = types.Content(role="model", parts=[types.Part(text=words)])
            return Event(invocation_id="inv", author="agent", content=content)

        await first.append_event(mine, said("the woken worker's write"))
        with pytest.raises(StaleSessionError):
            await second.append_event(theirs, said("the takeover's write"))
        await first.close()
        await second.close()

    asyncio.run(main())
    assert [text(e) for e in events(tmp_path / "s.db")] == ["the woken worker's write"]
