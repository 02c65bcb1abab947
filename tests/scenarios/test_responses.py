# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Response bodies: every id is derived from the conversation, never from a counter or a clock."""

from __future__ import annotations

import json

from killpoint.scenarios import Conversation, Reply, ToolRequest
from killpoint.scenarios.responses import output_items, response_body, response_id


def conv(output: str = "r1") -> Conversation:
    return Conversation.from_input(
        [
            {"role": "user", "content": "Go."},
            {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": output},
        ]
    )


BATCH = Reply.batch(ToolRequest("f", {"x": 1}), ToolRequest("f", {"x": 2}))


def test_same_conversation_same_ids() -> None:
    """Two separately built equal conversations give byte-identical bodies."""
    a = response_body(conv(), BATCH, model="m", request_size=100)
    b = response_body(conv(), BATCH, model="m", request_size=100)
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def test_different_history_different_ids() -> None:
    """A different tool output earlier in the conversation changes every id of the reply."""

    def ids(c: Conversation) -> set[str]:
        items = output_items(c, BATCH)
        return {response_id(c)} | {i["id"] for i in items} | {i["call_id"] for i in items}

    a, b = ids(conv("r1")), ids(conv("r2"))
    assert (5, 5, set()) == (len(a), len(b), a & b)


def test_calls_of_a_batch_have_distinct_ids_and_canonical_arguments() -> None:
    """Within one reply, call ids differ; arguments are sorted-key ASCII JSON."""
    items = output_items(
        conv(), Reply.batch(ToolRequest("f", {"b": "é", "a": 1}), ToolRequest("f"))
    )
    expected = (2, '{"a": 1, "b": "\\u00e9"}')
    assert expected == (len({i["call_id"] for i in items}), items[0]["arguments"])


def test_final_reply_is_a_message() -> None:
    """A final reply is one assistant message with the text."""
    items = output_items(conv(), Reply.final("bye"))
    assert [("message", "bye")] == [(i["type"], i["content"][0]["text"]) for i in items]
