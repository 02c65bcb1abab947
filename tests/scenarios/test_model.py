# ruff: noqa: SIM300 - tests assert `expected == actual`
"""The scripted model at the HTTP layer: default SDK clients, chaining, loud failures."""

from __future__ import annotations

import asyncio
import json
import socket
from pathlib import Path
from typing import Any

import httpx2
import openai
import pytest
from respx.models import AllMockedAssertionError

from killpoint.scenarios import Conversation, Reply, ScriptedModel
from killpoint.scenarios.builtin import research
from killpoint.scenarios.model import requests_seen

API_KEY = "sk-killpoint-test"


def client(**kwargs: Any) -> openai.OpenAI:
    return openai.OpenAI(api_key=API_KEY, max_retries=0, **kwargs)


def dump(response: Any) -> dict[str, Any]:
    return json.loads(response.model_dump_json())


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """Every attempt to resolve a name or open a socket is recorded and refused."""
    attempts: list[object] = []

    def refuse(*args: object, **kwargs: object) -> Any:
        attempts.append(args)
        raise OSError("test: the network is off")

    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket.socket, "connect", refuse)
    return attempts


def test_sync_and_async_default_clients_are_served(tmp_path: Path) -> None:
    """Clients built with defaults (no base_url, no http_client) get the script's reply."""

    async def async_call() -> Any:
        async with openai.AsyncOpenAI(api_key=API_KEY, max_retries=0) as c:
            return await c.responses.create(model="m", input="Find it.")

    with ScriptedModel(research.script, tmp_path):
        sync = client().responses.create(model="m", input="Find it.")
        asynchronous = asyncio.run(async_call())
    expected = [("function_call", "search", '{"query": "Find it."}')] * 2
    actual = [
        (r.output[0].type, r.output[0].name, r.output[0].arguments) for r in (sync, asynchronous)
    ]
    assert expected == actual
    assert dump(sync) == dump(asynchronous)


def test_an_unrouted_request_fails_loudly_and_never_reaches_the_network(
    tmp_path: Path, no_network: list[object]
) -> None:
    """A GET elsewhere and a POST to /v1/embeddings (no format serves it) raise respx's
    not-mocked error; no name is resolved and no socket is opened; the request log keeps
    both, with no format."""
    with ScriptedModel(research.script, tmp_path):
        with pytest.raises(AllMockedAssertionError, match=r"example\.com"):
            httpx2.get("https://example.com/")
        with pytest.raises(AllMockedAssertionError, match="embeddings"):
            client().embeddings.create(model="m", input="hi")
    assert [] == no_network
    assert [("GET", "/", None), ("POST", "/v1/embeddings", None)] == [
        (r["method"], r["path"], r["format"]) for r in requests_seen(tmp_path)
    ]


def test_the_no_network_guard_itself_works(no_network: list[object]) -> None:
    """Without the model installed the same request tries the network and is refused, so
    the empty attempt list above means something."""
    with pytest.raises(httpx2.ConnectError):
        httpx2.get("https://example.com/")
    assert [] != no_network


def test_previous_response_id_from_a_fresh_instance_equals_the_whole_transcript(
    tmp_path: Path,
) -> None:
    """Turn 2 chained by previous_response_id to a new ScriptedModel on the same state dir
    (a new process after a crash) gets the same reply, ids included, as turn 2 sent as the
    whole transcript to a model that never saw turn 1."""
    state = tmp_path / "provider"
    with ScriptedModel(research.script, state):
        first = client().responses.create(model="m", input="Find it.")
    call = first.output[0]
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "r1 r2 r3"}
    with ScriptedModel(research.script, state):  # a fresh instance: nothing in memory
        chained = client().responses.create(
            model="m", previous_response_id=first.id, input=[output]
        )
    transcript = [
        {"role": "user", "content": "Find it."},
        call.model_dump(exclude_none=True),
        output,
    ]
    with ScriptedModel(research.script, tmp_path / "elsewhere"):
        whole = client().responses.create(model="m", input=transcript)
    expected = (whole.id, [dump(i) for i in whole.output])
    assert expected == (chained.id, [dump(i) for i in chained.output])
    assert ("fetch_detail", '{"result_id": "r1"}') == (
        chained.output[0].name,
        chained.output[0].arguments,
    )


def test_an_unknown_previous_response_id_is_a_400(tmp_path: Path) -> None:
    """Chaining to a response the provider never gave fails loudly, naming the id."""
    with (
        ScriptedModel(research.script, tmp_path),
        pytest.raises(openai.BadRequestError, match="resp_nope"),
    ):
        client().responses.create(model="m", previous_response_id="resp_nope", input="x")


def test_a_raising_script_is_a_400_not_a_hang(tmp_path: Path) -> None:
    """A script that raises answers 400 with the exception, so the run fails visibly."""

    def broken(conversation: Conversation) -> Reply:
        raise KeyError("no such branch")

    with ScriptedModel(broken, tmp_path), pytest.raises(openai.BadRequestError, match="KeyError"):
        client().responses.create(model="m", input="x")


def test_same_request_to_fresh_models_gives_byte_identical_bodies(tmp_path: Path) -> None:
    """Two models in different state dirs answer the same request with the same bytes."""
    bodies = []
    for name in ("a", "b"):
        model = ScriptedModel(research.script, tmp_path / name, record_traffic=True)
        with model:
            client().responses.create(model="m", input="Find it.")
        bodies.append(model.traffic)
    assert bodies[0] == bodies[1]
    assert 1 == len(bodies[0])


def test_on_turn_hooks_fire_when_their_turn_is_requested(tmp_path: Path) -> None:
    """A hook for turn 2 runs when the request for turn 2 arrives, not for turn 1."""
    fired: list[int] = []
    model = ScriptedModel(research.script, tmp_path)
    model.on_turn(2, lambda: fired.append(2))
    with model:
        first = client().responses.create(model="m", input="Find it.")
        assert [] == fired
        client().responses.create(
            model="m",
            previous_response_id=first.id,
            input=[
                {"type": "function_call_output", "call_id": first.output[0].call_id, "output": "x"}
            ],
        )
    assert [2] == fired


def test_traffic_is_kept_only_when_asked(tmp_path: Path) -> None:
    """record_traffic=False keeps nothing in memory; True keeps (request, status, response)."""
    quiet = ScriptedModel(research.script, tmp_path / "q")
    loud = ScriptedModel(research.script, tmp_path / "l", record_traffic=True)
    for model in (quiet, loud):
        with model:
            client().responses.create(model="m", input="Find it.")
    assert (0, 200) == (len(quiet.traffic), loud.traffic[0][1])
    assert "Find it." == json.loads(loud.traffic[0][0])["input"]


def test_a_provider_that_forgot_answers_a_chained_request_with_a_400(tmp_path: Path) -> None:
    """After forget() (a fresh process on the same state folder), chaining to a response
    given before is a 400 naming the parameter, as for a response never given; the whole
    transcript is still answered."""
    state = tmp_path / "provider"
    with ScriptedModel(research.script, state):
        first = client().responses.create(model="m", input="Find it.")
    call = first.output[0]
    output = {"type": "function_call_output", "call_id": call.call_id, "output": "r1 r2 r3"}
    with ScriptedModel(research.script, state) as model:
        assert 1 == model.forget()
        with pytest.raises(openai.BadRequestError, match=first.id) as refused:
            client().responses.create(model="m", previous_response_id=first.id, input=[output])
        transcript = [{"role": "user", "content": "Find it."}, call.model_dump(), output]
        whole = client().responses.create(model="m", input=transcript)
    assert "previous_response_id" == refused.value.param
    assert "fetch_detail" == whole.output[0].name


def test_the_served_log_counts_replies_not_requests(tmp_path: Path) -> None:
    """Every request is in the turns log with its process; only those answered with a
    response are in the served log (a 400 is not served)."""
    import os

    from killpoint.scenarios.model import SERVED_LOG, turn_log

    with ScriptedModel(research.script, tmp_path):
        client().responses.create(model="m", input="Find it.")
        with pytest.raises(openai.BadRequestError):
            client().responses.create(model="m", previous_response_id="resp_nope", input="x")
    assert [(1, os.getpid())] == turn_log(tmp_path)
    assert [(1, os.getpid())] == turn_log(tmp_path, SERVED_LOG)
