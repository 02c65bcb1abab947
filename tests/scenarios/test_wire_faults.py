# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Model faults on every wire format, in the worker (each format's own SDK through the
HTTP mock) and at the local address (plain httpx on a real socket): 429 and 500 in the
format's error shape, a timeout, a dropped connection, and a reply cut mid-way."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from killpoint.scenarios import Fault, ScriptedModel
from killpoint.scenarios.builtin import research
from killpoint.scenarios.faults import FAULT_KINDS
from killpoint.scenarios.model_server import ModelServer

USER = [{"role": "user", "content": "Find it."}]
FORMATS = ("responses", "chat-completions", "anthropic-messages")
PATHS = {
    "responses": "/v1/responses",
    "chat-completions": "/v1/chat/completions",
    "anthropic-messages": "/v1/messages",
}
# The event a complete stream of each format ends with.
LAST_EVENT = {
    "responses": "response.completed",
    "chat-completions": "[DONE]",
    "anthropic-messages": "message_stop",
}


def body(wire: str, *, stream: bool = False) -> dict[str, Any]:
    if wire == "responses":
        return {"model": "m", "input": "Find it.", "stream": stream}
    extra = {"max_tokens": 64} if wire == "anthropic-messages" else {}
    return {"model": "m", "messages": USER, "stream": stream, **extra}


def sdk_call(wire: str, retries: int, stream: bool = False) -> Any:
    """The request through the format's own SDK (in this process: the HTTP mock)."""
    if wire == "anthropic-messages":
        anthropic = pytest.importorskip("anthropic")
        client = anthropic.Anthropic(api_key="k", max_retries=retries)
        reply = client.messages.create(model="m", max_tokens=64, messages=USER, stream=stream)
    else:
        oa = openai.OpenAI(api_key="k", max_retries=retries)
        if wire == "responses":
            reply = oa.responses.create(model="m", input="Find it.", stream=stream)
        else:
            reply = oa.chat.completions.create(model="m", messages=USER, stream=stream)  # type: ignore[call-overload]
    return list(reply) if stream else reply


def sdk_errors(wire: str) -> Any:
    if wire == "anthropic-messages":
        return pytest.importorskip("anthropic")
    return openai


def test_every_fault_kind_is_tested_here() -> None:
    assert {"429", "500", "timeout", "disconnect", "cut"} == set(FAULT_KINDS)


@pytest.mark.parametrize("wire", FORMATS)
def test_a_429_is_retried_by_the_sdk_after_the_delay_it_names(wire: str, tmp_path: Path) -> None:
    model = ScriptedModel(research.script, tmp_path, faults=[Fault(1, "429")], record_traffic=True)
    with model:
        sdk_call(wire, retries=1)
    assert [429, 200] == [status for _, status, _ in model.traffic]


@pytest.mark.parametrize("wire", FORMATS)
@pytest.mark.parametrize(
    ("kind", "error"),
    [
        ("500", "InternalServerError"),
        ("timeout", "APITimeoutError"),
        ("disconnect", "APIConnectionError"),
        ("cut", "APIConnectionError"),
    ],
)
@pytest.mark.parametrize("stream", [False, True])
def test_each_fault_is_the_sdks_own_error(
    wire: str, kind: str, error: str, stream: bool, tmp_path: Path
) -> None:
    """With no retry left the SDK raises its error class; the fault is spent once, so
    the same request is then answered."""
    errors = sdk_errors(wire)
    with ScriptedModel(research.script, tmp_path, faults=[Fault(1, kind)]):  # type: ignore[arg-type]
        with pytest.raises(getattr(errors, error)):
            sdk_call(wire, retries=0, stream=stream)
        assert sdk_call(wire, retries=0, stream=stream)


@pytest.mark.parametrize("wire", FORMATS)
@pytest.mark.parametrize("kind", ["429", "500"])
def test_an_error_status_at_the_local_address_has_the_formats_shape(
    wire: str, kind: str, tmp_path: Path
) -> None:
    with ModelServer(ScriptedModel(research.script, tmp_path, faults=[Fault(1, kind)])) as server:  # type: ignore[arg-type]
        failed = httpx.post(f"{server.url}{PATHS[wire]}", json=body(wire))
        answered = httpx.post(f"{server.url}{PATHS[wire]}", json=body(wire))
    assert (int(kind), "1", 200) == (
        failed.status_code,
        failed.headers["retry-after-ms"],
        answered.status_code,
    )
    error = failed.json()
    if wire == "anthropic-messages":
        assert ("error", {"429": "rate_limit_error", "500": "api_error"}[kind]) == (
            error["type"],
            error["error"]["type"],
        )
    else:
        assert {"429": "rate_limit_exceeded", "500": "server_error"}[kind] == error["error"]["type"]
    assert error["error"]["message"].startswith("scripted model: ")


@pytest.mark.parametrize("wire", FORMATS)
def test_a_timeout_at_the_local_address_is_the_clients_own(wire: str, tmp_path: Path) -> None:
    """The request is never answered: a client with a short read timeout gives up, and
    once it has closed its connection the held request ends (its thread returns while the
    server still runs, long before the 5 s hold)."""
    server = ModelServer(ScriptedModel(research.script, tmp_path, faults=[Fault(1, "timeout")]))
    with server:
        with pytest.raises(httpx.ReadTimeout):
            httpx.post(f"{server.url}{PATHS[wire]}", json=body(wire), timeout=0.5)
        held = [t for t in server.threads() if t.name == "killpoint-model-conn"]
        for thread in held:
            thread.join(3.0)
        assert [] == [t for t in held if t.is_alive()]
    assert [] == server.threads()


def test_a_timeout_held_past_its_hold_is_a_dropped_connection(tmp_path: Path) -> None:
    """A client that waits longer than the hold sees the connection closed unanswered."""
    fault = Fault(1, "timeout", hold_seconds=0.2)
    with (
        ModelServer(ScriptedModel(research.script, tmp_path, faults=[fault])) as server,
        pytest.raises(httpx.RemoteProtocolError, match="without sending a response"),
    ):
        httpx.post(f"{server.url}/v1/chat/completions", json=body("chat-completions"), timeout=30)


@pytest.mark.parametrize("wire", FORMATS)
def test_a_disconnect_at_the_local_address_closes_without_a_response(
    wire: str, tmp_path: Path
) -> None:
    with (
        ModelServer(
            ScriptedModel(research.script, tmp_path, faults=[Fault(1, "disconnect")])
        ) as server,
        pytest.raises(httpx.RemoteProtocolError, match="without sending a response"),
    ):
        httpx.post(f"{server.url}{PATHS[wire]}", json=body(wire))


@pytest.mark.parametrize("wire", FORMATS)
def test_a_stream_cut_at_the_local_address_drops_it_half_way(wire: str, tmp_path: Path) -> None:
    """The first half of the events arrive, then the connection drops mid chunked body:
    the stream's last event never comes. The next request streams whole."""
    received: list[str] = []
    model = ScriptedModel(research.script, tmp_path, faults=[Fault(1, "cut")])
    with ModelServer(model) as server:
        url = f"{server.url}{PATHS[wire]}"
        with (
            pytest.raises(httpx.RemoteProtocolError, match="incomplete chunked read"),
            httpx.stream("POST", url, json=body(wire, stream=True)) as response,
        ):
            for line in response.iter_lines():  # kept line by line: the read raises
                if line.startswith("data: "):
                    received.append(line)
        with httpx.stream("POST", url, json=body(wire, stream=True)) as response:
            whole = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert received == whole[: len(received)]
    assert 0 < len(received) <= len(whole) // 2
    last = whole[-1].removeprefix("data: ")
    assert LAST_EVENT[wire] == (last if last == "[DONE]" else json.loads(last)["type"])


@pytest.mark.parametrize("wire", FORMATS)
def test_a_whole_body_cut_at_the_local_address_falls_short_of_its_length(
    wire: str, tmp_path: Path
) -> None:
    with (
        ModelServer(ScriptedModel(research.script, tmp_path, faults=[Fault(1, "cut")])) as server,
        pytest.raises(httpx.RemoteProtocolError, match="without sending complete message body"),
    ):
        httpx.post(f"{server.url}{PATHS[wire]}", json=body(wire))
