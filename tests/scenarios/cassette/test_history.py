# ruff: noqa: SIM300 - tests assert `expected == actual`
"""A history: what the model was asked, the same whatever ids and spellings a run chose."""

from __future__ import annotations

from killpoint.scenarios.cassette.history import History, nearest, normalised, system_of, tools_of
from killpoint.scenarios.conversation import Conversation
from killpoint.scenarios.wire import CHAT, MESSAGES, RESPONSES


def conversation(call_id: str, amount: object) -> Conversation:
    return Conversation.from_input(
        [
            {"role": "user", "content": "Charge it."},
            {
                "type": "function_call",
                "call_id": call_id,
                "name": "charge",
                "arguments": f'{{"cents": {amount}, "to": "cus_1"}}',
            },
            {"type": "function_call_output", "call_id": call_id, "output": "ok"},
        ]
    )


def test_call_ids_are_renamed_by_order_and_whole_numbers_read_as_integers() -> None:
    """The provider's ids and a regenerated turn's fresh ones, 1999 and 1999.0: one key."""
    a = History("", (), normalised(conversation("call_abc", 1999)))
    b = History.of(RESPONSES, {}, conversation("call_zzz", "1999.0"), [])
    assert a.key() == b.key()
    assert ("call", "call-1", "charge", '{"cents": 1999, "to": "cus_1"}') == b.items[1]
    assert ("output", "call-1", "ok") == b.items[2]
    assert b.key() != History.of(RESPONSES, {}, conversation("call_abc", 2000), []).key()


def test_the_system_prompt_in_each_format() -> None:
    items = [{"role": "developer", "content": "Use tools."}, {"role": "user", "content": "Hi"}]
    assert "Be brief.\n\nUse tools." == system_of(RESPONSES, {"instructions": "Be brief."}, items)
    chat = {"messages": [{"role": "system", "content": [{"type": "text", "text": "Be brief."}]}]}
    assert "Be brief." == system_of(CHAT, chat, [])
    assert "Be brief." == system_of(
        MESSAGES, {"system": [{"type": "text", "text": "Be brief."}]}, []
    )


def test_the_tools_offered_by_name_in_each_format() -> None:
    assert ("fetch", "search") == tools_of(
        {"tools": [{"type": "function", "name": "search"}, {"name": "fetch"}]}
    )
    assert ("search",) == tools_of(
        {"tools": [{"type": "function", "function": {"name": "search"}}]}
    )
    assert ("web_search",) == tools_of({"tools": [{"type": "web_search"}]})


def test_where_two_histories_part_and_the_nearest() -> None:
    recorded = [
        History("s", ("t",), (("user", "a"),)),
        History("s", ("t",), (("user", "a"), ("assistant", "b"), ("user", "c"))),
    ]
    asked = History("s", ("t",), (("user", "a"), ("assistant", "b"), ("user", "d")))
    assert 4 == asked.departs_at(recorded[1])  # system, tools, a, b, then c vs d
    assert (1, recorded[1]) == nearest(asked, recorded)
    assert None is nearest(asked, [])
    assert ["system: s", "tools: t", "user: a", "assistant: b", "user: d"] == asked.lines()


def test_a_history_round_trips_through_json() -> None:
    h = History.of(RESPONSES, {"instructions": "x"}, conversation("call_1", 5), [])
    assert h == History.from_json(h.to_json())
    assert 2 == h.turn
