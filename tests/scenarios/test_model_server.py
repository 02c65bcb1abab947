# ruff: noqa: SIM300 - tests assert `expected == actual`
"""The scripted model at a real local address: any HTTP client in any process is served,
from the same script and provider state as the mock in the worker, and stopping it
leaves no thread and no open port behind."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import textwrap
import threading
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

import killpoint
from killpoint.scenarios import ScriptedModel
from killpoint.scenarios.builtin import research
from killpoint.scenarios.model import requests_seen
from killpoint.scenarios.model_server import (
    SCRIPTED_API_KEY,
    URL_VARIABLE,
    ModelServer,
    model_url,
    serve,
)

USER = [{"role": "user", "content": "Find it."}]


def chat(url: str, messages: list[dict[str, Any]], **extra: Any) -> httpx.Response:
    """A plain httpx request (legacy httpx, which the worker's HTTP mock does not patch)."""
    return httpx.post(
        f"{url}/v1/chat/completions", json={"model": "m", "messages": messages, **extra}
    )


def test_chat_completions_over_a_real_socket(tmp_path: Path) -> None:
    """A client that is not the openai SDK gets the script's reply at the local address,
    and the request log says it came over the socket."""
    with ModelServer(ScriptedModel(research.script, tmp_path)) as server:
        response = chat(server.url, USER)
    assert 200 == response.status_code
    message = response.json()["choices"][0]["message"]
    call = message["tool_calls"][0]
    assert ("search", {"query": "Find it."}) == (
        call["function"]["name"],
        json.loads(call["function"]["arguments"]),
    )
    assert "tool_calls" == response.json()["choices"][0]["finish_reason"]
    seen = requests_seen(tmp_path)
    assert [("POST", "/v1/chat/completions", "chat-completions", "local")] == [
        (r["method"], r["path"], r["format"], r["via"]) for r in seen
    ]


def test_the_socket_and_the_mock_give_the_same_reply(tmp_path: Path) -> None:
    """The openai SDK in the process (the mock) and a plain client at the address get the
    same completion, byte for byte in what matters: the same script, the same ids."""
    model = ScriptedModel(research.script, tmp_path)
    with ModelServer(model) as server, model:
        over_socket = chat(server.url, USER).json()
        in_process = openai.OpenAI(api_key="k", max_retries=0).chat.completions.create(
            model="m", messages=USER
        )
    assert over_socket == json.loads(in_process.model_dump_json(exclude_unset=True))


def test_a_streamed_completion_over_the_socket_is_chunked_server_sent_events(
    tmp_path: Path,
) -> None:
    """`stream: true` answers with chunked transfer encoding, one event per chunk, the
    usage chunk last when asked for, then `[DONE]`."""
    with (
        ModelServer(ScriptedModel(research.script, tmp_path)) as server,
        httpx.stream(
            "POST",
            f"{server.url}/v1/chat/completions",
            json={
                "model": "m",
                "messages": USER,
                "stream": True,
                "stream_options": {"include_usage": True},
            },
        ) as response,
    ):
        headers = response.headers
        lines = [line for line in response.iter_lines() if line]
    assert ("chunked", "text/event-stream") == (
        headers["transfer-encoding"],
        headers["content-type"].split(";")[0],
    )
    assert "data: [DONE]" == lines[-1]
    chunks = [json.loads(line.removeprefix("data: ")) for line in lines[:-1]]
    assert [] == chunks[-1]["choices"]
    assert chunks[-1]["usage"]["total_tokens"] > 0
    assert "tool_calls" == chunks[-2]["choices"][0]["finish_reason"]
    arguments = "".join(
        c["choices"][0]["delta"].get("tool_calls", [{}])[0].get("function", {}).get("arguments", "")
        for c in chunks[:-1]
    )
    assert {"query": "Find it."} == json.loads(arguments)


def test_any_process_is_served_through_the_environment(tmp_path: Path) -> None:
    """`serve` puts the base URL in the environment; a child process that knows nothing
    of killpoint, with the openai SDK built from defaults, is answered."""
    code = textwrap.dedent(
        """
        import openai
        reply = openai.OpenAI(max_retries=0).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Find it."}]
        )
        print(reply.choices[0].message.tool_calls[0].function.name)
        """
    )
    with serve(ScriptedModel(research.script, tmp_path)) as server:
        assert server.url == killpoint.model_url() == os.environ[URL_VARIABLE]
        assert (f"{server.url}/v1", SCRIPTED_API_KEY) == (
            os.environ["OPENAI_BASE_URL"],
            os.environ["OPENAI_API_KEY"],
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, timeout=60
        )
    assert (0, "search") == (out.returncode, out.stdout.strip()), out.stderr
    assert [("chat-completions", "local")] == [
        (r["format"], r["via"]) for r in requests_seen(tmp_path)
    ]
    assert URL_VARIABLE not in os.environ  # restored when the block ended


def test_without_a_server_model_url_says_how_to_ask_for_one(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv(URL_VARIABLE, raising=False)
    with pytest.raises(RuntimeError, match="local_model = True"):
        model_url()


def test_provider_state_outlives_the_server(tmp_path: Path) -> None:
    """A Responses API reply given by one server is chained to from the next one on the
    same state folder (a fresh worker after a crash)."""
    state = tmp_path / "provider"
    with ModelServer(ScriptedModel(research.script, state)) as first:
        turn1 = httpx.post(f"{first.url}/v1/responses", json={"model": "m", "input": "Find it."})
    call = turn1.json()["output"][0]
    output = {"type": "function_call_output", "call_id": call["call_id"], "output": "r1 r2 r3"}
    with ModelServer(ScriptedModel(research.script, state)) as second:
        turn2 = httpx.post(
            f"{second.url}/v1/responses",
            json={"model": "m", "previous_response_id": turn1.json()["id"], "input": [output]},
        )
    assert (200, "fetch_detail") == (turn2.status_code, turn2.json()["output"][0]["name"])


def test_a_request_no_format_serves_is_a_404_and_is_logged(tmp_path: Path) -> None:
    with ModelServer(ScriptedModel(research.script, tmp_path)) as server:
        response = httpx.get(f"{server.url}/v1/models")
    assert 404 == response.status_code
    assert "GET /v1/models is not a request it serves" in response.json()["error"]["message"]
    assert [("GET", "/v1/models", None)] == [
        (r["method"], r["path"], r["format"]) for r in requests_seen(tmp_path)
    ]


def test_stop_leaves_no_thread_and_no_listening_port(tmp_path: Path) -> None:
    """Stopped with a keep-alive connection still open: every thread it started is joined
    and the port refuses connections."""
    before = set(threading.enumerate())
    server = ModelServer(ScriptedModel(research.script, tmp_path)).start()
    client = httpx.Client(base_url=server.url)  # keeps its connection open
    assert (
        200
        == client.post("/v1/chat/completions", json={"model": "m", "messages": USER}).status_code
    )
    assert server.threads()
    server.stop()
    client.close()
    assert [] == server.threads()
    assert set() == set(threading.enumerate()) - before
    port = int(server.url.rsplit(":", 1)[1])
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5)


@pytest.mark.parametrize("via", ["mock", "local"])
def test_a_stream_is_held_after_n_chunks_and_goes_on_when_released(
    via: str, tmp_path: Path
) -> None:
    """Arming model:1:chunk:3 holds the stream once two chunks are out: the client (the
    openai SDK in this process, or plain httpx at the local address) reads two events and
    no more until the gate is released; then the stream goes on to its end."""
    from killpoint.scenarios import gates

    held, release = threading.Event(), threading.Event()
    announced: list[str] = []

    def announce(name: str) -> None:
        announced.append(name)
        held.set()

    gates.configure([gates.chunk_gate(1, 3)], announce=announce, wait=lambda _n: release.wait())
    read: list[str] = []
    progress = threading.Condition()
    model = ScriptedModel(research.script, tmp_path)

    def got(event: str) -> None:
        with progress:
            read.append(event)
            progress.notify_all()

    def client(url: str) -> None:
        if via == "mock":
            stream = openai.OpenAI(api_key="k", max_retries=0).chat.completions.create(
                model="m", messages=USER, stream=True
            )
            for chunk in stream:
                got(chunk.model_dump_json())
        else:
            body = {"model": "m", "messages": USER, "stream": True}
            with httpx.stream("POST", f"{url}/v1/chat/completions", json=body) as response:
                for line in response.iter_lines():
                    if line.startswith("data:"):
                        got(line)

    with ModelServer(model) as server, model:
        reader = threading.Thread(target=client, args=(server.url,))
        reader.start()
        assert held.wait(30)
        with progress:  # the two chunks sent before the gate reach the client
            assert progress.wait_for(lambda: len(read) >= 2, 30)
            during = len(read)
        release.set()
        reader.join(30)
    gates.disarm()
    assert (["model:1:chunk:3"], 2) == (announced, during)
    assert not reader.is_alive() and len(read) > 3
