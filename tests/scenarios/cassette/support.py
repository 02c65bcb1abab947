"""What the cassette tests share: a stand-in provider at a local address, the recording proxy
in front of it, and the research flow driven over raw HTTP in every wire format, whole or
streamed, keeping every response's bytes."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from killpoint.scenarios import ScriptedModel
from killpoint.scenarios.builtin import research
from killpoint.scenarios.cassette import Cassette, Outcome, Redactions, dump, load
from killpoint.scenarios.cassette.recorder import Recorder, Upstream
from killpoint.scenarios.cassette.replies import read, split_events
from killpoint.scenarios.model_server import ModelServer
from killpoint.scenarios.stand_in import KeyChecked
from killpoint.scenarios.wire import CHAT, MESSAGES, RESPONSES

KEY = "sk-stand-in-0123456789abcdef"
FORMATS = (RESPONSES, CHAT, MESSAGES)
PATHS = {RESPONSES: "/v1/responses", CHAT: "/v1/chat/completions", MESSAGES: "/v1/messages"}
FIRST = "Research crash consistency of agent runtimes."
SYSTEM = "Be brief."


@dataclass
class Exchange:
    status: int
    body: bytes  # the response's bytes, a stream's as they came


@contextlib.contextmanager
def stand_in(state: Path) -> Iterator[ModelServer]:
    """The research script behind a provider's key check, at a local address."""
    model = ScriptedModel(research.script, state)
    with ModelServer(KeyChecked(model, {"openai": KEY, "anthropic": KEY})) as server:
        yield server


@contextlib.contextmanager
def proxy(
    provider: ModelServer, redactions: Redactions | None = None
) -> Iterator[tuple[ModelServer, Recorder]]:
    recorder = Recorder(
        Upstream(openai=f"{provider.url}/v1", anthropic=provider.url), redactions, keys={}
    )
    try:
        with ModelServer(recorder) as server:
            yield server, recorder
    finally:
        recorder.close()


def headers(key: str) -> dict[str, str]:
    return {"authorization": f"Bearer {key}", "x-api-key": key}


def said(wire: str, stream: bool, body: bytes) -> Any:
    text = body.decode()
    return read(wire, None if stream else text, split_events(text) if stream else None)


def converse(
    url: str, wire: str, stream: bool, *, key: str = KEY, first: str = FIRST, system: str = SYSTEM
) -> list[Exchange]:
    """The research flow to its end: each reply's calls answered with a result, in the
    format's own shapes, until the model answers in text. Every response's bytes kept."""
    exchanges: list[Exchange] = []
    items: list[dict[str, Any]] = [{"role": "user", "content": first}]
    messages: list[dict[str, Any]] = [{"role": "user", "content": first}]
    with httpx.Client(timeout=30) as client:
        for _ in range(10):
            if wire == RESPONSES:
                body: dict[str, Any] = {"model": "m", "input": items, "instructions": system}
            elif wire == CHAT:
                body = {
                    "model": "m",
                    "messages": [{"role": "system", "content": system}, *messages],
                }
            else:
                body = {"model": "m", "max_tokens": 64, "system": system, "messages": messages}
            body["stream"] = stream
            response = client.post(f"{url}{PATHS[wire]}", json=body, headers=headers(key))
            exchanges.append(Exchange(response.status_code, response.content))
            if response.status_code != 200:
                return exchanges
            reply = said(wire, stream, response.content)
            if not reply.calls:
                return exchanges
            outputs = [(c["call_id"], f"result of {c['name']}") for c in reply.calls]
            if wire == RESPONSES:
                items += [dict(i) for i in reply.output]
                items += [
                    {"type": "function_call_output", "call_id": cid, "output": out}
                    for cid, out in outputs
                ]
            elif wire == CHAT:
                messages.append(
                    {
                        "role": "assistant",
                        "content": reply.text,
                        "tool_calls": [
                            {
                                "id": c["call_id"],
                                "type": "function",
                                "function": {"name": c["name"], "arguments": c["arguments"]},
                            }
                            for c in reply.calls
                        ],
                    }
                )
                messages += [
                    {"role": "tool", "tool_call_id": cid, "content": out} for cid, out in outputs
                ]
            else:
                uses = [
                    {
                        "type": "tool_use",
                        "id": "toolu_" + c["call_id"].removeprefix("call_"),
                        "name": c["name"],
                        "input": json.loads(c["arguments"]),
                    }
                    for c in reply.calls
                ]
                messages.append({"role": "assistant", "content": uses})
                messages.append(
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": "toolu_" + cid.removeprefix("call_"),
                                "content": out,
                            }
                            for cid, out in outputs
                        ],
                    }
                )
    raise AssertionError("the flow did not end in 10 turns")


def recorded(
    tmp_path: Path, wire: str, stream: bool, redactions: Redactions | None = None
) -> tuple[Cassette, list[Exchange]]:
    """The research flow in `wire` recorded through the proxy from the stand-in: the
    cassette (written and read back) and what the client got."""
    with (
        stand_in(tmp_path / "provider") as provider,
        proxy(provider, redactions) as (server, recorder),
    ):
        exchanges = converse(server.url, wire, stream)
    cassette = Cassette(
        name="research",
        inputs=(FIRST,),
        outcomes=(Outcome("COMPLETED", research.SUMMARY, ()),),
        interactions=tuple(recorder.interactions),
        redactions=recorder.redactions,
    )
    path = tmp_path / f"{wire}-{stream}.json"
    dump(cassette, path)
    return load(path), exchanges
