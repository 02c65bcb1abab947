# ruff: noqa: SIM300 - tests assert `expected == actual`
"""A recorded reply read back in every format, whole or streamed, and rendered again as a
behaviour reshapes it."""

from __future__ import annotations

import json

import pytest

from killpoint.scenarios.anthropic_messages import message_body
from killpoint.scenarios.anthropic_messages import stream_events as message_events
from killpoint.scenarios.behaviours import regenerate
from killpoint.scenarios.cassette.replies import ReplyError, read, split_events
from killpoint.scenarios.chat_completions import completion_body, stream_chunks
from killpoint.scenarios.conversation import Conversation
from killpoint.scenarios.responses import answer_for, body_of, stream_events
from killpoint.scenarios.script import Reply, ToolRequest
from killpoint.scenarios.wire import CHAT, MESSAGES, RESPONSES

CONVERSATION = Conversation.from_input([{"role": "user", "content": "Go."}])
REPLY = Reply(
    calls=(ToolRequest("search", {"q": "a"}), ToolRequest("fetch", {"id": 2})),
    text="Looking it up.",
)
ANSWER = answer_for(CONVERSATION, REPLY, model="m", request_size=40)
RENDERED = {
    (RESPONSES, False): json.dumps(body_of(ANSWER)),
    (RESPONSES, True): b"".join(stream_events(ANSWER)).decode(),
    (CHAT, False): json.dumps(completion_body(ANSWER)),
    (CHAT, True): b"".join(stream_chunks(ANSWER, include_usage=True)).decode(),
    (MESSAGES, False): json.dumps(message_body(ANSWER)),
    (MESSAGES, True): b"".join(message_events(ANSWER)).decode(),
}


@pytest.mark.parametrize(("wire", "stream"), list(RENDERED), ids=lambda x: str(x))
def test_every_format_reads_as_the_same_reply(wire: str, stream: bool) -> None:
    text = RENDERED[(wire, stream)]
    said = read(wire, None if stream else text, split_events(text) if stream else None)
    assert "Looking it up." == said.text
    assert [("search", {"q": "a"}), ("fetch", {"id": 2})] == [
        (c["name"], json.loads(c["arguments"])) for c in said.calls
    ]
    assert [c["call_id"] for c in ANSWER.calls] == [c["call_id"] for c in said.calls]
    assert (ANSWER.input_tokens, ANSWER.output_tokens) == (said.input_tokens, said.output_tokens)
    assert ANSWER.id == said.answer_id


def test_events_split_and_joined_are_the_same_bytes() -> None:
    text = "event: a\r\ndata: 1\r\n\r\n: ping\n\ndata: 2\n\ndata: [DONE]"
    events = split_events(text)
    assert text == "".join(events)
    assert 4 == len(events)


def test_a_reply_that_is_none_of_its_format_is_refused() -> None:
    with pytest.raises(ReplyError, match="not a chat-completions reply"):
        read(CHAT, '{"choices": [{"message": {"tool_calls": [{"id": "x"}]}}]}', None)
    with pytest.raises(ReplyError, match="not JSON"):
        read(RESPONSES, None, ["data: {broken\n\n"])


def test_behaviours_reshape_the_recorded_reply() -> None:
    said = read(RESPONSES, RENDERED[(RESPONSES, False)], None)
    ids = [c["call_id"] for c in said.calls]
    same = said.answer()
    assert [c["call_id"] for c in same.calls] == ids and same.id == said.answer_id
    fresh = said.answer(regenerate("regenerate-ids", CONVERSATION, said.reply(), 1))
    assert not set(ids) & {c["call_id"] for c in fresh.calls}
    assert fresh.id != said.answer_id
    moved = said.answer(regenerate("reorder", CONVERSATION, said.reply(), 1))
    assert list(reversed(ids)) == [c["call_id"] for c in moved.calls]  # ids go with their calls
    respelled = said.answer(regenerate("respell", CONVERSATION, said.reply(), 1))
    first, again = said.calls[1]["arguments"], respelled.calls[1]["arguments"]
    assert first != again and json.loads(first) == json.loads(again)
    assert respelled.output_tokens > said.output_tokens  # longer text, more tokens
    planned = said.answer(
        regenerate("replan", CONVERSATION, said.reply(), 1, {"search": lambda a: {"q": "b"}})
    )
    assert {"q": "b"} == json.loads(planned.calls[0]["arguments"])
    assert ids == [c["call_id"] for c in planned.calls]
