# ruff: noqa: SIM300 - tests assert `expected == actual`
"""The normalised conversation a script sees."""

from __future__ import annotations

from typing import Any

from killpoint.scenarios import Call, Conversation, Turn


def transcript(*, parts: bool = False) -> list[dict[str, Any]]:
    user: Any = [{"type": "input_text", "text": "Go."}] if parts else "Go."
    return [
        {"role": "system", "content": "be terse"},
        {"role": "user", "content": user},
        {"type": "function_call", "call_id": "c1", "name": "f", "arguments": '{"b": 2, "a": 1}'},
        {"type": "function_call", "call_id": "c2", "name": "g", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "one"},
        {"type": "function_call_output", "call_id": "c2", "output": "two"},
        {"type": "reasoning", "id": "rs_1", "summary": []},
        {"type": "message", "role": "assistant", "id": "m1", "status": "completed",
         "content": [{"type": "output_text", "text": "done", "annotations": []}]},
    ]  # fmt: skip


def test_shapes_of_the_same_conversation_normalise_equal() -> None:
    """String content and content parts, echoed ids and statuses, system and reasoning
    items: the same conversation normalises to the same items and digest."""
    a = Conversation.from_input(transcript())
    b = Conversation.from_input(transcript(parts=True))
    assert (a.items, a.digest()) == (b.items, b.digest())


def test_turns_group_a_parallel_batch_with_its_outputs() -> None:
    """Two calls and their two outputs are one turn; the final text is the next turn."""
    conv = Conversation.from_input(transcript())
    expected = [
        Turn(None, (Call("c1", "f", {"a": 1, "b": 2}), Call("c2", "g", {})), {"c1": "one", "c2": "two"}),
        Turn("done", ()),
    ]  # fmt: skip
    assert expected == conv.turns()
    assert "one" == conv.turns()[0].output_of(conv.turns()[0].calls[0])


def test_turns_restart_at_each_user_message_but_model_turn_counts_the_session() -> None:
    """turns() covers the latest run; model_turn counts every model turn so far, plus one."""
    conv = Conversation.from_input([*transcript(), {"role": "user", "content": "Again."}])
    expected = ([], 3, "Again.", ["Go.", "Again."])
    assert expected == (conv.turns(), conv.model_turn, conv.last_user, conv.user_inputs)
    assert 2 == len(conv.turns(since_last_user=False))


def test_digest_changes_with_any_content() -> None:
    """A different tool output, argument or user text gives a different digest."""
    base = transcript()
    variants = []
    for index, key, value in [
        (4, "output", "ONE"),
        (2, "arguments", '{"a": 2}'),
        (1, "content", "Stop."),
    ]:
        changed = [dict(item) for item in base]
        changed[index][key] = value
        variants.append(Conversation.from_input(changed).digest())
    digests = {Conversation.from_input(base).digest(), *variants}
    assert 4 == len(digests)


def test_extend_equals_one_input() -> None:
    """A conversation extended with new items equals the whole input read at once."""
    items = transcript()
    assert Conversation.from_input(items) == Conversation.from_input(items[:3]).extend(items[3:])


def test_empty_assistant_text_is_not_a_turn() -> None:
    """An assistant message with no text (a tool-call-only reply echoed back) adds nothing."""
    conv = Conversation.from_input(
        [{"role": "user", "content": "x"}, {"role": "assistant", "content": ""}]
    )
    assert ([], 1) == (conv.turns(), conv.model_turn)


def test_a_return_value_wrapped_as_result_is_read_as_returned() -> None:
    """ADK sends a function's plain return value as `{"result": value}`: the script reads
    the value (a string as it is, anything else as JSON); any other JSON stays as sent."""
    outputs = {
        "c1": '{"result": "step 1 done"}',
        "c2": '{"result": 42}',
        "c3": '{"result": "a", "extra": 1}',
        "c4": '{"error": "MirrorDown: refused"}',
    }
    items: list[dict[str, Any]] = [{"role": "user", "content": "Go."}]
    items += [
        {"type": "function_call", "call_id": c, "name": "f", "arguments": "{}"} for c in outputs
    ]
    items += [
        {"type": "function_call_output", "call_id": c, "output": o} for c, o in outputs.items()
    ]
    (turn,) = Conversation.from_input(items).turns()
    assert {
        "c1": "step 1 done",
        "c2": "42",
        "c3": '{"result": "a", "extra": 1}',
        "c4": '{"error": "MirrorDown: refused"}',
    } == turn.outputs
