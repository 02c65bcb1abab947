# ruff: noqa: SIM300 - tests assert `expected == actual`
"""A cassette replayed by the scripted model: the recorded bytes for a recorded history, in
every wire format, whole or streamed; a history never recorded is a miss written to the
model's state folder, answered with an error; a re-asked turn reshaped by a behaviour still
leads to recorded histories; a chained Responses API conversation replays across
processes."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import httpx
import pytest

from killpoint.scenarios import ScriptedModel
from killpoint.scenarios.cassette import Replayer, dump, load, unrecorded
from killpoint.scenarios.cassette.history import History
from killpoint.scenarios.model import regenerated_turns
from killpoint.scenarios.model_server import ModelServer
from killpoint.scenarios.wire import MESSAGES, RESPONSES
from tests.scenarios.cassette.support import (
    FIRST,
    FORMATS,
    KEY,
    PATHS,
    converse,
    headers,
    recorded,
    said,
)


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("wire", FORMATS)
def test_a_recorded_conversation_replays_byte_for_byte(
    tmp_path: Path, wire: str, stream: bool
) -> None:
    """The flow recorded from the stand-in through the proxy, then replayed offline: every
    response the client gets is the recording's, byte for byte, and the cassette holds no
    API key."""
    cassette, live = recorded(tmp_path, wire, stream)
    assert 5 == len(cassette.interactions)  # search, three fetches, the summary
    model = ScriptedModel(Replayer(cassette), tmp_path / "replay")
    with ModelServer(model) as server:
        replayed = converse(server.url, wire, stream, key="sk-any-other-key")
    assert [(e.status, e.body) for e in live] == [(e.status, e.body) for e in replayed]
    assert [] == unrecorded(tmp_path / "replay")
    for path in tmp_path.glob("*.json"):
        assert KEY not in path.read_text()


@pytest.mark.parametrize("wire", FORMATS)
def test_a_reply_is_rendered_when_asked_for_otherwise_than_recorded(
    tmp_path: Path, wire: str
) -> None:
    """Recorded streamed, asked whole: the same text and calls, the same call ids."""
    cassette, live = recorded(tmp_path, wire, stream=True)
    with ModelServer(ScriptedModel(Replayer(cassette), tmp_path / "replay")) as server:
        whole = converse(server.url, wire, stream=False)
    assert len(live) == len(whole)
    for streamed, asked in zip(live, whole, strict=True):
        first, now = said(wire, True, streamed.body), said(wire, False, asked.body)
        assert (first.text, first.calls) == (now.text, now.calls)


@pytest.mark.parametrize("wire", FORMATS)
def test_a_history_never_recorded_is_a_miss(tmp_path: Path, wire: str) -> None:
    """Another first message: an error in the format's shape (400) naming where the history
    departs, and the miss in the state folder with the nearest recorded history."""
    cassette, _ = recorded(tmp_path, wire, stream=False)
    with ModelServer(ScriptedModel(Replayer(cassette), tmp_path / "replay")) as server:
        exchanges = converse(server.url, wire, False, first="Research something else.")
    assert [400] == [e.status for e in exchanges]
    text = exchanges[0].body.decode()
    assert "never saw this conversation" in text
    assert "Research something else." in text
    if wire == MESSAGES:
        assert "invalid_request_error" == json.loads(text)["error"]["type"]
    (miss,) = unrecorded(tmp_path / "replay")
    asked = History.from_json(miss["history"])
    assert ("user", "Research something else.") == asked.items[0]
    assert 1 == miss["turn"]
    assert 0 == miss["nearest"]["index"]
    assert f"user: {FIRST}" == History.from_json(miss["nearest"]["history"]).lines()[miss["at"]]


def test_another_system_prompt_or_tool_set_is_another_history(tmp_path: Path) -> None:
    """The system prompt is part of what the model was asked: changed, nothing matches."""
    cassette, _ = recorded(tmp_path, RESPONSES, stream=False)
    with ModelServer(ScriptedModel(Replayer(cassette), tmp_path / "replay")) as server:
        exchanges = converse(server.url, RESPONSES, False, system="Be thorough.")
    assert [400] == [e.status for e in exchanges]
    (miss,) = unrecorded(tmp_path / "replay")
    assert 0 == miss["at"]  # the first line: the system prompt


def _ask_elsewhere(state: str, cassette_path: str, body: dict[str, Any], conn: Any) -> None:
    model = ScriptedModel(Replayer(load(cassette_path)), state, behaviour="regenerate-ids")
    with ModelServer(model) as server:
        conn.send(httpx.post(f"{server.url}/v1/responses", json=body).json())
    conn.close()


def test_fresh_ids_from_a_regenerated_turn_still_lead_to_recorded_histories(
    tmp_path: Path,
) -> None:
    """A turn served to another process (the worker that crashed) and asked again with
    `regenerate-ids`: the same calls under fresh ids; the next request, carrying them, is
    still the recorded history (ids are matched by their order)."""
    cassette, _ = recorded(tmp_path, RESPONSES, stream=False)
    path = str(next(tmp_path.glob("responses-*.json")))
    state = tmp_path / "replay"
    first = {
        "model": "m",
        "input": [{"role": "user", "content": FIRST}],
        "instructions": "Be brief.",
    }
    context = multiprocessing.get_context("fork")
    ours, theirs = context.Pipe(duplex=False)
    child = context.Process(target=_ask_elsewhere, args=(str(state), path, first, theirs))
    child.start()
    before = ours.recv()
    child.join()
    assert 0 == child.exitcode
    model = ScriptedModel(Replayer(cassette), state, behaviour="regenerate-ids")
    with ModelServer(model) as server:
        again = httpx.post(f"{server.url}/v1/responses", json=first).json()
        (old,), (new,) = before["output"], again["output"]
        assert (old["name"], old["arguments"]) == (new["name"], new["arguments"])
        assert old["call_id"] != new["call_id"]
        follow = {
            **first,
            "input": [
                *first["input"],
                new,
                {
                    "type": "function_call_output",
                    "call_id": new["call_id"],
                    "output": "result of search",
                },
            ],
        }
        reply = httpx.post(f"{server.url}/v1/responses", json=follow)
    assert 200 == reply.status_code, reply.text
    assert "fetch_detail" == reply.json()["output"][0]["name"]
    assert [] == unrecorded(state)
    (logged,) = regenerated_turns(state)
    assert old["call_id"] == logged["calls"][0]["first_call_id"]


def test_a_chained_conversation_replays_in_a_fresh_model(tmp_path: Path) -> None:
    """previous_response_id to a recorded response: the replaying model keeps what it served
    in its state folder, so a fresh one (a fresh worker) can chain to it."""
    cassette, _ = recorded(tmp_path, RESPONSES, stream=False)
    state = tmp_path / "replay"
    body = {
        "model": "m",
        "input": [{"role": "user", "content": FIRST}],
        "instructions": "Be brief.",
    }
    with ModelServer(ScriptedModel(Replayer(cassette), state)) as server:
        first = httpx.post(f"{server.url}/v1/responses", json=body, headers=headers("k")).json()
    (call,) = first["output"]
    chained = {
        "model": "m",
        "instructions": "Be brief.",
        "previous_response_id": first["id"],
        "input": [
            {
                "type": "function_call_output",
                "call_id": call["call_id"],
                "output": "result of search",
            }
        ],
    }
    with ModelServer(ScriptedModel(Replayer(cassette), state)) as server:
        reply = httpx.post(f"{server.url}{PATHS[RESPONSES]}", json=chained)
    assert 200 == reply.status_code, reply.text
    assert "fetch_detail" == reply.json()["output"][0]["name"]


@pytest.mark.parametrize("wire", FORMATS)
def test_a_secret_the_conversation_carries_replays_as_the_recording_wrote_it(
    tmp_path: Path, wire: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An environment variable named like a secret whose value the conversation carries
    (here a word of the user's request): the recording writes it masked, and a replay that
    sees it again, with the variable still set, reads the request the same way and gets
    the recorded replies instead of a miss."""
    from killpoint.recording.record import masker

    monkeypatch.setenv("SHOP_SERVICE_TOKEN", "consistency")
    cassette, live = recorded(tmp_path, wire, stream=False)
    written = tmp_path / "masked.json"
    dump(masker([])(cassette.to_json()), written)  # as `killpoint record` writes it
    assert "consistency" not in written.read_text()  # the recording holds no secret
    model = ScriptedModel(Replayer(load(written)), tmp_path / "replay")
    with ModelServer(model) as server:
        replayed = converse(server.url, wire, stream=False)
    assert [e.status for e in live] == [e.status for e in replayed]
    assert [] == unrecorded(tmp_path / "replay")
