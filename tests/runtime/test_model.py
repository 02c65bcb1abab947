# ruff: noqa: SIM300 - tests assert `expected == actual`
"""OpenAIResponses over the real openai SDK, served by respx through the httpx2 mocker."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import httpx
import openai
import pytest
import respx

from runtime import Message, ModelError, OpenAIResponses, ToolCall
from runtime.model import ModelReply, to_input_items
from tests.helpers import (
    MODEL_ID,
    TEST_API_KEY,
    error_response,
    function_call,
    make_model,
    message_item,
    serve,
    usage_block,
)


def ask(
    model: OpenAIResponses,
    messages: list[Message],
    instructions: str | None = None,
    tools: list[dict[str, Any]] | None = None,
) -> ModelReply:
    """One model turn, synchronously."""
    return asyncio.run(model.respond(messages, instructions=instructions, tools=tools or []))


SCHEMA = [
    {
        "type": "function",
        "name": "add",
        "description": "Add two numbers.",
        "parameters": {"type": "object", "properties": {}, "required": []},
    }
]


def test_mock_intercepts_the_sdk_default_client(openai_mock: respx.MockRouter) -> None:
    """A model built with the SDK's defaults (no injected client) is answered by the route:
    its call count moves, and the request carries what the runtime sent."""
    route, _ = serve(openai_mock, [[message_item("pong")]])
    model = make_model()

    reply = ask(model, [Message(role="user", content="ping")])

    assert 1 == route.call_count
    assert "pong" == reply.message.content
    sent = json.loads(route.calls.last.request.content)
    assert MODEL_ID == sent["model"]
    assert [{"role": "user", "content": "ping"}] == sent["input"]
    assert f"Bearer {TEST_API_KEY}" == route.calls.last.request.headers["authorization"]


def test_unrouted_request_fails_loudly(openai_mock: respx.MockRouter) -> None:
    """With the mock active and no route for /responses, the SDK's request raises respx's
    AllMockedAssertionError (an AssertionError) instead of reaching the network: had the
    transport not been patched, it would have been a connection error (ModelError)."""
    model = make_model()

    with pytest.raises(AssertionError, match="not mocked"):
        ask(model, [Message(role="user", content="ping")])

    assert [] == list(openai_mock.routes)


def test_sync_client_is_intercepted_too(openai_mock: respx.MockRouter) -> None:
    """The mocker patches httpx2's sync transport as well as the async one."""
    route, _ = serve(openai_mock, [[message_item("sync pong")]])
    client = openai.OpenAI(api_key=TEST_API_KEY, max_retries=0)

    response = client.responses.create(model=MODEL_ID, input="ping")

    assert 1 == route.call_count
    assert "sync pong" == response.output_text


def test_reply_is_parsed_into_calls_text_and_usage(openai_mock: respx.MockRouter) -> None:
    """function_call items become ToolCalls (arguments kept as the JSON string the API sent),
    output_text parts become the content, and usage is counted as one model call."""
    serve(
        openai_mock,
        [
            [
                message_item("let me add"),
                function_call("c1", "add", {"a": 1, "b": 2}),
                function_call("c2", "add", '{"a": 3, "b": 4}'),
            ]
        ],
    )

    reply = ask(make_model(), [Message(role="user", content="add")], "be brief", SCHEMA)

    expected_calls = (
        ToolCall(call_id="c1", name="add", arguments='{"a": 1, "b": 2}'),
        ToolCall(call_id="c2", name="add", arguments='{"a": 3, "b": 4}'),
    )
    assert expected_calls == reply.message.tool_calls
    assert "let me add" == reply.message.content
    assert (10, 5, 15, 1) == (
        reply.usage.input_tokens,
        reply.usage.output_tokens,
        reply.usage.total_tokens,
        reply.usage.model_calls,
    )
    assert usage_block()["total_tokens"] == reply.usage.total_tokens


def test_request_carries_instructions_tools_and_history(
    openai_mock: respx.MockRouter,
) -> None:
    """The request holds the instructions, the flat tool schemas, and the conversation as
    Responses input items (function_call + function_call_output for a past batch)."""
    route, _ = serve(openai_mock, [[message_item("ok")]])
    history = [
        Message(role="user", content="add"),
        Message(role="assistant", tool_calls=(ToolCall("c1", "add", '{"a": 1}'),)),
        Message(role="tool", content="1", call_id="c1", name="add", status="ok"),
    ]

    ask(make_model(), history, "be brief", SCHEMA)

    sent = json.loads(route.calls.last.request.content)
    assert "be brief" == sent["instructions"]
    assert SCHEMA == sent["tools"]
    assert [
        {"role": "user", "content": "add"},
        {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a": 1}'},
        {"type": "function_call_output", "call_id": "c1", "output": "1"},
    ] == sent["input"]
    assert to_input_items(history) == sent["input"]


@pytest.mark.parametrize("status", [400, 401, 429, 500, 503])
def test_http_error_becomes_model_error(openai_mock: respx.MockRouter, status: int) -> None:
    """Any HTTP error from the API surfaces as ModelError (the agent turns it into ERROR)."""
    route, _ = serve(openai_mock, [status])

    with pytest.raises(ModelError, match=str(status)):
        ask(make_model(), [Message(role="user", content="x")])

    assert 1 == route.call_count


def test_retries_when_asked(openai_mock: respx.MockRouter) -> None:
    """With max_retries=1 the SDK retries a 500 once and the second answer is used (the
    retry-after header keeps the SDK's backoff at zero)."""
    flaky = error_response(500)
    flaky.headers["retry-after-ms"] = "0"
    route, _ = serve(openai_mock, [flaky, [message_item("second time")]])

    reply = ask(make_model(max_retries=1), [Message(role="user", content="x")])

    assert 2 == route.call_count
    assert "second time" == reply.message.content


def test_dropped_connection_becomes_model_error(openai_mock: respx.MockRouter) -> None:
    """A transport failure (connection reset) is a ModelError too, not a crash."""
    route = openai_mock.post("/responses").mock(side_effect=httpx.ConnectError("reset by peer"))

    with pytest.raises(ModelError, match="Connection"):
        ask(make_model(), [Message(role="user", content="x")])

    assert 1 == route.call_count


def test_repr_never_shows_the_key() -> None:
    """The model's repr (which lands in logs and error messages) omits the API key."""
    model = OpenAIResponses("gpt-x", api_key="sk-killpoint-secret-repr")

    assert "OpenAIResponses(id='gpt-x')" == repr(model)
