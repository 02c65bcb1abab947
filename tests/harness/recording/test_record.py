# ruff: noqa: SIM300 - tests assert `expected == actual`
"""`record`: an agent run once against a provider (the stand-in, at a local address, behind
its key) through the recording proxy, written as a cassette; refused, with nothing
written, when there is nothing to record or the provider will not answer."""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from killpoint.errors import RecordError
from killpoint.recording.record import Plan, record
from killpoint.scenarios import ScriptedModel
from killpoint.scenarios.builtin import research
from killpoint.scenarios.cassette import load
from killpoint.scenarios.cassette.recorder import Recorder
from killpoint.scenarios.model_server import ModelServer
from killpoint.scenarios.stand_in import KeyChecked

KEY = "sk-proj-fake-recording-key-0123456789"
TOKEN = "ghp_fakeTokenOfTheRecordingEnvironment42"


@contextlib.contextmanager
def provider(state: Path) -> Iterator[str]:
    """The research script at a local address, behind the key KEY: its OpenAI base URL."""
    with ModelServer(KeyChecked(ScriptedModel(research.script, state), {"openai": KEY})) as s:
        yield f"{s.url}/v1"


@pytest.fixture
def keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("DEPLOY_TOKEN", TOKEN)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


@pytest.mark.usefixtures("keyed")
def test_a_scenario_recorded_on_the_reference_runtime(tmp_path: Path) -> None:
    out = tmp_path / "cassettes" / "research.json"
    with provider(tmp_path / "p") as url:
        made = record(Plan("reference", out, scenario="research", provider=url))
    cassette = load(out)
    assert ("research", "research") == (cassette.name, cassette.scenario)
    assert research.SCENARIO.inputs == cassette.inputs
    (outcome,) = cassette.outcomes
    assert ("COMPLETED", research.SUMMARY) == (outcome.status, outcome.content)
    assert ("search", "fetch_detail", "fetch_detail", "fetch_detail") == outcome.calls
    assert [1, 2, 3, 4, 5] == [i.turn for i in cassette.interactions]
    assert all(i.response.status == 200 for i in cassette.interactions)
    assert url == cassette.recorded["provider"] and "runs" == cassette.recorded["mode"]
    assert ["COMPLETED"] == [r.status for r in made.results]
    text = out.read_text()
    assert KEY not in text and TOKEN not in text


@pytest.mark.usefixtures("keyed")
def test_a_secret_anywhere_in_the_conversation_is_masked(tmp_path: Path) -> None:
    """A secret of the environment that the agent put in what it sent (here, its input) is
    never written: masked in the history, in the replies that quote it, in the outcome."""
    out = tmp_path / "c.json"
    with provider(tmp_path / "p") as url:
        record(Plan("reference", out, scenario="research", inputs=(f"Find {TOKEN}",), provider=url))
    text = out.read_text()
    assert TOKEN not in text
    assert "Find [redacted]" in text
    assert TOKEN not in json.dumps(load(out).to_json())


@pytest.mark.usefixtures("keyed")
def test_inputs_of_the_agents_own_name_the_cassette(tmp_path: Path) -> None:
    out = tmp_path / "refund.json"
    with provider(tmp_path / "p") as url:
        record(
            Plan(
                "reference",
                out,
                scenario="research",
                inputs=("Research one.", "Research two."),
                name="two-runs",
                provider=url,
                agent_version="1.4.2",
            )
        )
    cassette = load(out)
    assert ("two-runs", ("Research one.", "Research two.")) == (cassette.name, cassette.inputs)
    assert ["COMPLETED", "COMPLETED"] == [o.status for o in cassette.outcomes]
    assert "1.4.2" == cassette.recorded["agent_version"]


def test_a_refused_key_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-the-providers-key")
    out = tmp_path / "c.json"
    with provider(tmp_path / "p") as url, pytest.raises(RecordError, match=r"refused .*401"):
        record(Plan("reference", out, scenario="research", provider=url))
    assert not out.exists()


@pytest.mark.usefixtures("keyed")
def test_an_agent_that_bypasses_the_proxy_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A client with a base URL of its own (here: straight at the provider) is never
    recorded: said, and no empty cassette is written."""
    out = tmp_path / "c.json"
    with provider(tmp_path / "p") as url:
        monkeypatch.setattr(Recorder, "environ", staticmethod(lambda *a: {"OPENAI_BASE_URL": url}))
        with pytest.raises(RecordError, match="no request through the recording proxy"):
            record(Plan("reference", out, scenario="research", provider=url))
    assert not out.exists()


@pytest.mark.parametrize(
    ("plan", "message"),
    [
        ({}, "give --input TEXT"),
        ({"scenario": "cassette:x.json"}, "is a cassette"),
        ({"scenario": "research", "mode": "nope"}, "--mode 'nope' is not a mode"),
        ({"scenario": "research", "redact_paths": ("user",)}, "should begin with '\\$'"),
    ],
)
def test_bad_input_names_the_fix(tmp_path: Path, plan: dict[str, object], message: str) -> None:
    with pytest.raises(RecordError, match=message):
        record(Plan("reference", tmp_path / "c.json", **plan))  # type: ignore[arg-type]
    assert [] == os.listdir(tmp_path)


@pytest.mark.usefixtures("keyed")
def test_a_provider_out_of_reach_is_named_not_the_agents_client(tmp_path: Path) -> None:
    """The agent's requests came through the proxy but the provider could not be reached:
    said so (with --provider to check), not blamed on a base URL of the client's own."""
    out = tmp_path / "c.json"
    plan = Plan("reference", out, scenario="research", provider="http://127.0.0.1:9/v1")
    with pytest.raises(RecordError) as raised:
        record(plan)
    message = str(raised.value)
    assert message.startswith("killpoint record: the provider at http://127.0.0.1:9/v1 could")
    assert "check --provider and the network" in message
    assert not out.exists()
