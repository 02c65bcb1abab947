# ruff: noqa: SIM300 - tests assert `expected == actual`
"""A cassette as a crash-matrix scenario: the replayed baseline is the recorded run, byte
for byte; an agent whose prompt was edited since the recording is told its cassette is
stale; a resumed run that asks the model what the recording never saw has a
`history-unrecorded` finding with both histories; no secret of the recording environment
reaches the cassette or anything a matrix writes."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from killpoint.adapters.registry import load_adapter
from killpoint.engine.campaign import Campaign, CampaignConfig
from killpoint.engine.engine import SESSION_ID, Engine
from killpoint.engine.options import EngineConfig
from killpoint.judge.oracle import comparable
from killpoint.recording.record import SESSION_ID as RECORDED_SESSION
from killpoint.recording.record import Plan, record
from killpoint.scenarios import ScriptedModel
from killpoint.scenarios.builtin import research
from killpoint.scenarios.model_server import ModelServer
from killpoint.scenarios.stand_in import KeyChecked
from killpoint.values.normal_form import exclude

KEY = "sk-proj-fake-matrix-key-0123456789"
REPO = Path(__file__).resolve().parents[3]
AGENTS = "tests.harness.recording.agents"
INPUT = "Research crash consistency of agent runtimes."


@contextlib.contextmanager
def provider(state: Path) -> Iterator[str]:
    with ModelServer(KeyChecked(ScriptedModel(research.script, state), {"openai": KEY})) as s:
        yield f"{s.url}/v1"


@pytest.fixture(autouse=True)
def keyed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def campaign(tmp_path: Path, runtime: str, cassette: Path, points: str) -> list[dict[str, Any]]:
    config = CampaignConfig.from_options(
        runtime=runtime,
        scenarios=f"cassette:{cassette}",
        modes="tool-batch",
        points=points,
        workers=2,
        keep="none",
        work_root=str(tmp_path / "work"),
    )
    return [c.to_json() for c in Campaign(config).run().cells]


@pytest.mark.slow
def test_the_replayed_baseline_is_the_recorded_run(tmp_path: Path) -> None:
    """agno recorded from the stand-in (a provider's own bytes), then the row's baseline
    replayed from the cassette: the store holds the same session, field by field, with the
    same effects."""
    assert SESSION_ID == RECORDED_SESSION
    out = tmp_path / "research-agno.json"
    with provider(tmp_path / "p") as url:
        made = record(Plan("agno", out, scenario="research", mode="tool-batch", provider=url))
    engine = Engine(EngineConfig(work_root=tmp_path / "work", keep="none"))
    base = engine.baseline(("agno", f"cassette:{out}", "tool-batch", "sqlite"))
    assert None is base.problem, base.problem
    assert None is base.nondeterministic
    recorded = exclude(made.session, load_adapter("agno").excluded)
    assert json.dumps(comparable(recorded), sort_keys=True) == json.dumps(
        comparable(base.session), sort_keys=True
    )
    per_tool: Counter[str] = Counter()
    for (tool, _), n in base.effects.items():
        per_tool[tool] += n
    assert {"search": 1, "fetch_detail": 3} == dict(per_tool)


@pytest.mark.slow
def test_an_edited_prompt_makes_the_cassette_stale(tmp_path: Path) -> None:
    """Recorded with one prompt; the agent's prompt edited since: every cell of the row says
    the cassette is stale, quoting both prompts. The agent as recorded passes."""
    out = tmp_path / "agent.json"
    with provider(tmp_path / "p") as url:
        record(Plan(f"{AGENTS}:brief", out, inputs=(INPUT,), provider=url))
    edited = campaign(tmp_path / "edited", f"{AGENTS}:thorough", out, "boundaries")
    assert edited and {"diverged"} == {c["verdict"] for c in edited}
    (finding,) = {json.dumps(c["findings"][0], sort_keys=True) for c in edited}
    stale = json.loads(finding)
    assert "cassette-stale" == stale["kind"]
    assert stale["sentence"].startswith(
        "the cassette is stale: the agent's first request no longer matches the recording: "
        "the request reads 'system: Be thorough.' where the recording has 'system: Be brief.'"
    )
    same = campaign(tmp_path / "same", f"{AGENTS}:brief", out, "boundaries")
    assert same and {"ok"} == {c["verdict"] for c in same}


@pytest.mark.slow
def test_a_tool_whose_result_changes_under_a_crash_leads_off_the_recording(
    tmp_path: Path,
) -> None:
    """A fetch that says how often it ran: killed inside its batch and run again, it
    answers otherwise, and the next model request is one the recording never saw. The
    cell's first finding says so, with the two histories side by side."""
    out = tmp_path / "counting.json"
    with provider(tmp_path / "p") as url:
        record(Plan(f"{AGENTS}:counting", out, inputs=(INPUT,), provider=url))
    ran = campaign(tmp_path, f"{AGENTS}:counting", out, "mid-batch")
    cells = {c["schedule"][0].removesuffix(":0"): c for c in ran}
    assert {"mid-batch:1", "mid-batch:2", "mid-batch:3", "mid-batch:4"} == set(cells)
    # The first batch's search says nothing of its runs (the run is lost there, as expected).
    assert ["run-lost"] == [f["kind"] for f in cells["mid-batch:1"]["findings"]]
    for point in ("mid-batch:2", "mid-batch:3", "mid-batch:4"):
        cell = cells[point]
        first = cell["findings"][0]
        assert ("diverged", "history-unrecorded") == (cell["verdict"], first["kind"])
        assert "fetch number 2" in first["sentence"] and "fetch number 1" in first["sentence"]
        assert cell["detail"] == first["sentence"]
        marked = [line for line in first["evidence"] if line.startswith(">>")]
        assert 1 == len(marked) and "fetch number 1" in marked[0] and "fetch number 2" in marked[0]


@pytest.mark.slow
def test_no_secret_of_the_recording_environment_is_written(tmp_path: Path) -> None:
    """A fake key and a fake token in the environment, the token even in what the agent is
    asked: neither is in the cassette, the record's output, the matrix's output, its report,
    its JSON or any cell folder it kept."""
    token = "ghp_fakeDeployTokenOfThisEnvironment77"
    env = {
        **os.environ,
        "OPENAI_API_KEY": KEY,
        "DEPLOY_TOKEN": token,
        "PYTHONPATH": str(REPO),
        "TMPDIR": str(tmp_path),
    }
    env.pop("OPENAI_BASE_URL", None)
    cassette = tmp_path / "cassettes" / "agent.json"
    recorded = subprocess.run(
        [sys.executable, "-m", "killpoint.scenarios.stand_in", "research", "--",
         sys.executable, "-m", "killpoint.cli.main", "record", "--runtime", f"{AGENTS}:brief",
         "--input", f"{INPUT} Use {token}.", "--out", str(cassette)],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert 0 == recorded.returncode, recorded.stderr
    matrix = subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "matrix", "--runtime", f"{AGENTS}:brief",
         "--scenarios", f"cassette:{cassette}", "--modes", "tool-batch", "--points",
         "boundaries", "--keep", "all", "--work-dir", str(tmp_path / "work"),
         "--json", str(tmp_path / "out" / "m.json"), "--report", str(tmp_path / "out" / "m.html")],
        env=env, cwd=tmp_path, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert 0 == matrix.returncode, matrix.stdout + matrix.stderr
    assert "[redacted]" in cassette.read_text()
    outputs = recorded.stdout + recorded.stderr + matrix.stdout + matrix.stderr
    files = [p for p in tmp_path.rglob("*") if p.is_file() and not p.is_symlink()]
    assert any(p.suffix == ".html" for p in files) and any(p.name.endswith(".log") for p in files)
    for secret in (KEY, token):
        assert secret not in outputs
        leaked = [str(p) for p in files if secret.encode() in p.read_bytes()]
        assert [] == leaked, secret
