# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Every wire format answers from the one script: tool calls go out and their results come
back in each format's own shapes, a whole conversation gets the same calls and the same
final answer in each, and a streamed reply put together is the whole reply."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from killpoint.scenarios import ScriptedModel
from killpoint.scenarios.builtin import research
from killpoint.scenarios.model_server import ModelServer

USER = [{"role": "user", "content": "Find it."}]


def _responses(post: Any) -> tuple[list[tuple[str, Any, str]], str]:
    items: list[dict[str, Any]] = [{"role": "user", "content": "Find it."}]
    calls: list[tuple[str, Any, str]] = []
    while True:
        reply = post("/v1/responses", {"model": "m", "input": items})
        made = [i for i in reply["output"] if i["type"] == "function_call"]
        if not made:
            return calls, reply["output"][0]["content"][0]["text"]
        items += reply["output"]
        for call in made:
            calls.append((call["name"], json.loads(call["arguments"]), call["call_id"]))
            items.append(
                {"type": "function_call_output", "call_id": call["call_id"], "output": "r1 r2"}
            )


def _chat(post: Any) -> tuple[list[tuple[str, Any, str]], str]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "Be brief."}, *USER]
    calls: list[tuple[str, Any, str]] = []
    while True:
        message = post("/v1/chat/completions", {"model": "m", "messages": messages})["choices"][0][
            "message"
        ]
        messages.append(message)
        if not message.get("tool_calls"):
            return calls, message["content"]
        for call in message["tool_calls"]:
            function = call["function"]
            calls.append((function["name"], json.loads(function["arguments"]), call["id"]))
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": "r1 r2"})


def _messages(post: Any) -> tuple[list[tuple[str, Any, str]], str]:
    messages: list[dict[str, Any]] = list(USER)
    calls: list[tuple[str, Any, str]] = []
    while True:
        reply = post(
            "/v1/messages",
            {"model": "m", "max_tokens": 64, "system": "Be brief.", "messages": messages},
        )
        messages.append({"role": "assistant", "content": reply["content"]})
        uses = [b for b in reply["content"] if b["type"] == "tool_use"]
        if not uses:
            return calls, reply["content"][0]["text"]
        results = []
        for use in uses:
            calls.append((use["name"], use["input"], use["id"]))
            results.append({"type": "tool_result", "tool_use_id": use["id"], "content": "r1 r2"})
        messages.append({"role": "user", "content": results})


def test_a_whole_conversation_goes_the_same_way_in_every_format(tmp_path: Path) -> None:
    """The research flow driven to its end over the socket in each format's shapes: the
    same calls with the same arguments and the same answer; the call ids come from the
    same digests (`call_…` in OpenAI's formats, `toolu_…` in Anthropic's)."""
    with ModelServer(ScriptedModel(research.script, tmp_path)) as server:

        def post(path: str, body: dict[str, Any]) -> Any:
            response = httpx.post(f"{server.url}{path}", json=body)
            assert 200 == response.status_code, response.text
            return response.json()

        outcomes = {
            name: run(post) for name, run in (("r", _responses), ("c", _chat), ("m", _messages))
        }
    (r_calls, r_text), (c_calls, c_text), (m_calls, m_text) = outcomes.values()
    assert len(r_calls) >= 3
    assert [c[:2] for c in r_calls] == [c[:2] for c in c_calls] == [c[:2] for c in m_calls]
    assert r_text == c_text == m_text
    assert [c[2] for c in r_calls] == [c[2] for c in c_calls]
    assert all(c[2].startswith("toolu_") for c in m_calls)
    # Ids are the history's: asked again, the same conversation gets the same ids.
    with ModelServer(ScriptedModel(research.script, tmp_path / "again")) as server:

        def again(path: str, body: dict[str, Any]) -> Any:
            return httpx.post(f"{server.url}{path}", json=body).json()

        assert (m_calls, m_text) == _messages(again)


def test_a_streamed_chat_completion_put_together_is_the_whole_one(tmp_path: Path) -> None:
    """The openai SDK's chunks, accumulated as a client does, give the whole completion's
    message; the usage chunk comes only when asked for, and carries the whole's usage."""
    client = openai.OpenAI(api_key="k", max_retries=0)
    with ScriptedModel(research.script, tmp_path):
        whole = client.chat.completions.create(model="m", messages=USER)  # type: ignore[arg-type]
        plain = list(client.chat.completions.create(model="m", messages=USER, stream=True))  # type: ignore[arg-type]
        counted = list(
            client.chat.completions.create(
                model="m",
                messages=USER,  # type: ignore[arg-type]
                stream=True,
                stream_options={"include_usage": True},
            )
        )
    assert all(c.usage is None for c in plain)
    assert (whole.usage, []) == (counted[-1].usage, counted[-1].choices)
    calls: dict[int, dict[str, str]] = {}
    for chunk in plain:
        for call in chunk.choices[0].delta.tool_calls or ():
            slot = calls.setdefault(call.index, {"id": "", "name": "", "arguments": ""})
            slot["id"] += call.id or ""
            slot["name"] += (call.function and call.function.name) or ""
            slot["arguments"] += (call.function and call.function.arguments) or ""
    expected = [
        {"id": c.id, "name": c.function.name, "arguments": c.function.arguments}  # type: ignore[union-attr]
        for c in whole.choices[0].message.tool_calls or ()
    ]
    assert expected == [calls[i] for i in sorted(calls)]
    assert {whole.id} == {c.id for c in plain}
    assert "tool_calls" == plain[-1].choices[0].finish_reason == whole.choices[0].finish_reason


def test_a_streamed_text_reply_put_together_is_the_whole_one(tmp_path: Path) -> None:
    """A final answer (text, no calls) streamed in several deltas."""
    with ScriptedModel(research.script, tmp_path):  # the flow's last turn answers in text
        client = openai.OpenAI(api_key="k", max_retries=0)
        messages: list[dict[str, Any]] = list(USER)
        while True:
            whole = client.chat.completions.create(model="m", messages=messages)  # type: ignore[arg-type]
            message = whole.choices[0].message
            if not message.tool_calls:
                break
            messages.append(message.model_dump(exclude_none=True))
            messages += [
                {"role": "tool", "tool_call_id": c.id, "content": "r1 r2"}
                for c in message.tool_calls
            ]
        chunks = list(client.chat.completions.create(model="m", messages=messages, stream=True))  # type: ignore[arg-type]
    deltas = [c.choices[0].delta.content for c in chunks if c.choices[0].delta.content]
    assert len(deltas) > 1
    assert (message.content, "stop") == ("".join(deltas), chunks[-1].choices[0].finish_reason)


def test_a_streamed_anthropic_message_put_together_is_the_whole_one(tmp_path: Path) -> None:
    anthropic = pytest.importorskip("anthropic")
    client = anthropic.Anthropic(api_key="k", max_retries=0)
    with ScriptedModel(research.script, tmp_path):
        whole = client.messages.create(model="m", max_tokens=64, messages=USER)  # type: ignore[arg-type]
        with client.messages.stream(model="m", max_tokens=64, messages=USER) as stream:  # type: ignore[arg-type]
            types = [event.type for event in stream]
            final = stream.get_final_message()
    assert whole.model_dump() == final.model_dump()
    assert ("message_start", "message_stop") == (types[0], types[-1])
    assert {
        "content_block_start",
        "content_block_delta",
        "content_block_stop",
        "message_delta",
    } <= set(types)


def test_a_streamed_response_ends_with_the_whole_response(tmp_path: Path) -> None:
    client = openai.OpenAI(api_key="k", max_retries=0)
    with ScriptedModel(research.script, tmp_path):
        whole = client.responses.create(model="m", input="Find it.")
        events = list(client.responses.create(model="m", input="Find it.", stream=True))
    assert ("response.created", "response.completed") == (events[0].type, events[-1].type)
    assert whole.model_dump() == events[-1].response.model_dump()  # type: ignore[union-attr]
    assert list(range(len(events))) == [e.sequence_number for e in events]


@pytest.mark.parametrize(
    ("path", "body", "says"),
    [
        ("/v1/chat/completions", {"model": "m", "messages": "hi"}, "messages must be a list"),
        (
            "/v1/messages",
            {"model": "m", "messages": [{"role": "system", "content": "x"}]},
            "top-level `system`",
        ),
        ("/v1/chat/completions", {"model": "m", "messages": [{"role": "tool"}]}, "tool_call_id"),
        ("/v1/responses", "[1, 2]", "not a JSON object"),
    ],
)
def test_a_malformed_request_is_a_400_that_says_what_is_wrong(
    path: str, body: Any, says: str, tmp_path: Path
) -> None:
    with ModelServer(ScriptedModel(research.script, tmp_path)) as server:
        content = body if isinstance(body, str) else json.dumps(body)
        response = httpx.post(f"{server.url}{path}", content=content)
    assert 400 == response.status_code
    assert says in response.text
