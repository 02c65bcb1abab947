# ruff: noqa: SIM300 - tests assert `expected == actual`
"""The recording proxy: passes requests on to the provider with the right key, keeps every
answered one, never a credential; the user's redactions apply before anything is kept, and
the agent gets what the cassette keeps."""

from __future__ import annotations

import json
from pathlib import Path

import httpx

from killpoint.scenarios.cassette import Redactions
from killpoint.scenarios.cassette.recorder import Recorder, Upstream
from killpoint.scenarios.cassette.redact import REDACTED
from killpoint.scenarios.model_server import SCRIPTED_API_KEY, ModelServer
from killpoint.scenarios.wire import MESSAGES, RESPONSES
from tests.scenarios.cassette.support import FIRST, KEY, converse, stand_in


def test_the_scripted_placeholder_key_is_sent_as_the_environments(tmp_path: Path) -> None:
    """An agent built by a killpoint adapter sends the scripted model's key: the provider
    gets the one given for it; the cassette keeps neither."""
    with stand_in(tmp_path / "p") as provider:
        recorder = Recorder(Upstream(f"{provider.url}/v1", provider.url), keys={"openai": KEY})
        with ModelServer(recorder) as proxy:
            exchanges = converse(proxy.url, RESPONSES, False, key=SCRIPTED_API_KEY)
        recorder.close()
    assert [200] * 5 == [e.status for e in exchanges]
    assert KEY in recorder.secrets
    kept = json.dumps([i.to_json() for i in recorder.interactions])
    assert KEY not in kept and SCRIPTED_API_KEY not in kept
    assert "authorization" not in kept.lower() and "x-api-key" not in kept.lower()


def test_a_refused_request_is_kept_but_never_replayed(tmp_path: Path) -> None:
    with stand_in(tmp_path / "p") as provider:
        recorder = Recorder(Upstream(f"{provider.url}/v1", provider.url))
        with ModelServer(recorder) as proxy:
            exchanges = converse(proxy.url, MESSAGES, False, key="sk-wrong-key-123")
        recorder.close()
    assert [401] == [e.status for e in exchanges]
    (refused,) = recorder.interactions
    assert (401, None) == (refused.response.status, refused.said)


def test_redactions_apply_to_requests_and_replies_and_the_agent_sees_them(tmp_path: Path) -> None:
    """A path in the request is gone from the kept history; a path in the reply is gone
    from what the agent got, so the recorded run is the one a replay reproduces."""
    rules = Redactions(paths=("$.input[0].content", "$.usage"))
    with stand_in(tmp_path / "p") as provider:
        recorder = Recorder(Upstream(f"{provider.url}/v1", provider.url), rules)
        with ModelServer(recorder) as proxy:
            got = httpx.post(
                f"{proxy.url}/v1/responses",
                json={"model": "m", "input": [{"role": "user", "content": FIRST}]},
                headers={"authorization": f"Bearer {KEY}"},
            )
        recorder.close()
    assert REDACTED == got.json()["usage"]
    (kept,) = recorder.interactions
    assert ("user", REDACTED) == kept.history.items[0]
    assert REDACTED == json.loads(kept.response.body or "")["usage"]


def test_requests_a_replay_cannot_answer_are_passed_on_and_named(tmp_path: Path) -> None:
    with stand_in(tmp_path / "p") as provider:
        recorder = Recorder(Upstream(f"{provider.url}/v1", provider.url))
        with ModelServer(recorder) as proxy:
            got = httpx.get(f"{proxy.url}/v1/models", headers={"authorization": f"Bearer {KEY}"})
        recorder.close()
    assert 404 == got.status_code  # the provider's answer, passed back
    assert ["GET /v1/models"] == recorder.unrecordable
    assert [] == recorder.interactions


def test_a_provider_out_of_reach_is_a_bad_gateway(tmp_path: Path) -> None:
    recorder = Recorder(Upstream("http://127.0.0.1:9/v1", "http://127.0.0.1:9"))
    with ModelServer(recorder) as proxy:
        got = httpx.post(f"{proxy.url}/v1/responses", json={"model": "m", "input": "hi"})
    recorder.close()
    assert 502 == got.status_code
    assert "cannot be reached" in got.json()["error"]["message"]


def test_hooks_run_when_their_turn_is_asked(tmp_path: Path) -> None:
    """A scenario that cancels its run at a model turn is recorded with that cancel."""
    seen: list[int] = []
    with stand_in(tmp_path / "p") as provider:
        recorder = Recorder(Upstream(f"{provider.url}/v1", provider.url))
        recorder.on_turn(3, lambda: seen.append(3))
        with ModelServer(recorder) as proxy:
            converse(proxy.url, RESPONSES, False)
        recorder.close()
    assert [3] == seen


def test_a_provider_out_of_reach_is_counted_as_such(tmp_path: Path) -> None:
    """The recorder says a request came and the provider was out of reach for it (the
    recording then names the provider, not the agent's client)."""
    recorder = Recorder(Upstream("http://127.0.0.1:9/v1", "http://127.0.0.1:9"))
    with ModelServer(recorder) as proxy:
        httpx.post(f"{proxy.url}/v1/responses", json={"model": "m", "input": "hi"})
    recorder.close()
    assert 1 == recorder.received
    (unreached,) = recorder.unreached
    assert "http://127.0.0.1:9/v1" == unreached.base
    assert unreached.error.startswith("ConnectError: ")
