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

from killpoint.runtime import Message, ModelError, OpenAIResponses, ToolCall
from killpoint.runtime.model import ModelReply, chain_point, to_input_items
from tests.helpers import (
    MODEL_ID,
    TEST_API_KEY,
    error_response,
    function_call,
    json_response,
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


# -- chained turns (previous_response_id) ------------------------------------------------------

BATCH = [
    Message(role="user", content="add"),
    Message(role="assistant", tool_calls=(ToolCall("c1", "add", '{"a": 1}'),), response_id="r1"),
    Message(role="tool", content="1", call_id="c1", name="add", status="ok"),
]


def chained_model() -> OpenAIResponses:
    return OpenAIResponses(MODEL_ID, api_key=TEST_API_KEY, max_retries=0, chain=True)


def sent(route: respx.Route) -> list[dict[str, Any]]:
    return [json.loads(call.request.content) for call in route.calls]


def test_chain_point_is_the_newest_response_and_what_follows() -> None:
    """The newest assistant message with a response id, and the messages after it; with
    no response yet, nothing to chain to and the whole conversation."""
    again = [*BATCH, Message(role="assistant", content="2", response_id="r2")]
    more = [*again, Message(role="user", content="again")]

    assert ("r1", BATCH[2:]) == chain_point(BATCH)
    assert ("r2", more[4:]) == chain_point(more)
    assert (None, BATCH[:1]) == chain_point(BATCH[:1])


def test_a_chained_turn_sends_only_what_the_model_has_not_seen(
    openai_mock: respx.MockRouter,
) -> None:
    """chain=True: the request names the previous response and carries only the tool
    output after it; instructions and tools are sent every turn (the API does not
    carry them over)."""
    route, _ = serve(openai_mock, [[message_item("2")]])

    ask(chained_model(), BATCH, "be brief", SCHEMA)

    [body] = sent(route)
    assert "r1" == body["previous_response_id"]
    assert [{"type": "function_call_output", "call_id": "c1", "output": "1"}] == body["input"]
    assert ("be brief", SCHEMA) == (body["instructions"], body["tools"])


def test_the_default_resends_the_transcript(openai_mock: respx.MockRouter) -> None:
    route, _ = serve(openai_mock, [[message_item("2")]])

    ask(make_model(), BATCH)

    [body] = sent(route)
    assert "previous_response_id" not in body
    assert to_input_items(BATCH) == body["input"]


def unknown_response(param: str) -> httpx.Response:
    error = {"message": "no such response", "type": "invalid_request_error", "param": param}
    return json_response({"error": error}, 400)


def test_a_forgotten_response_falls_back_to_the_transcript(
    openai_mock: respx.MockRouter,
) -> None:
    """A provider that no longer holds the previous response answers 400 naming
    previous_response_id: the same turn is sent again, whole, without it."""
    route, _ = serve(openai_mock, [unknown_response("previous_response_id"), [message_item("2")]])

    reply = ask(chained_model(), BATCH)

    first, second = sent(route)
    assert "r1" == first["previous_response_id"]
    assert "previous_response_id" not in second
    assert to_input_items(BATCH) == second["input"]
    assert "2" == reply.message.content


def test_another_bad_request_is_not_retried(openai_mock: respx.MockRouter) -> None:
    """Only a 400 about previous_response_id earns the fallback: any other is a ModelError
    after one request."""
    route, _ = serve(openai_mock, [unknown_response("tools")])

    with pytest.raises(ModelError, match="400"):
        ask(chained_model(), BATCH)

    assert 1 == route.call_count
