# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Cassettes in pytest, end to end with pytester: `crash.check(cassette=...)` read from the
test file's folder, `--crash-record-mode` (none fails on a missing cassette naming it and
the flag; once records it through the recording proxy against the stand-in provider, then
replays; rewrite records again), a stale cassette's failure, and the `crash_cassettes`
marker's one item per cassette of a folder."""

from __future__ import annotations

import contextlib
import json
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from killpoint.scenarios import ScriptedModel
from killpoint.scenarios.builtin import research
from killpoint.scenarios.model_server import ModelServer
from killpoint.scenarios.stand_in import KeyChecked
from tests.harness.plugin.test_hooks import own_tmpdir, run  # noqa: F401 - a fixture

pytest_plugins = ["pytester"]

KEY = "sk-proj-fake-plugin-key-0123456789"
REPO = Path(__file__).resolve().parents[3]
AGENTS = "tests.harness.recording.agents"
SMALL = 'modes="tool-batch", points="boundaries"'


@contextlib.contextmanager
def provider(state: Path) -> Iterator[str]:
    """The research script behind KEY at a local address (the stand-in): its base URL."""
    with ModelServer(KeyChecked(ScriptedModel(research.script, state), {"openai": KEY})) as s:
        yield f"{s.url}/v1"


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project whose tests live in tests/, its cassettes in tests/cassettes/; the
    recording environment's key set, no provider URL unless a test gives one."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    pytester.makeini("[pytest]\n")
    (pytester.path / "tests").mkdir()
    return pytester


def write_test(project: pytest.Pytester, body: str) -> Path:
    path = project.path / "tests" / "test_agent.py"
    path.write_text(body)
    return path


CHECK_ONE = f"""
def test_agent(crash):
    crash.check("reference", cassette="cassettes/research.json", scenario="research", {SMALL})
"""


def test_a_missing_cassette_fails_naming_the_file_and_the_flag(project: pytest.Pytester) -> None:
    write_test(project, CHECK_ONE)
    result = run(project, "tests")
    result.assert_outcomes(failed=1)
    missing = project.path / "tests" / "cassettes" / "research.json"
    result.stdout.fnmatch_lines(
        [
            f"*killpoint: cassette '{missing}' does not exist; record it with "
            "--crash-record-mode=once*"
        ]
    )
    assert not missing.exists()


def test_a_bad_record_mode_is_a_usage_error(project: pytest.Pytester) -> None:
    write_test(project, CHECK_ONE)
    result = project.runpytest("--crash-record-mode=always", "tests")
    assert 4 == result.ret
    result.stderr.fnmatch_lines(
        ["*--crash-record-mode='always': not a record mode; choose from none, once, rewrite*"]
    )


@pytest.mark.usefixtures("own_tmpdir")
def test_once_records_a_missing_cassette_then_replays_it_offline(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_test(project, CHECK_ONE)
    cassette = project.path / "tests" / "cassettes" / "research.json"
    with provider(project.path / "p") as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        result = run(project, "--crash-record-mode=once", "tests")
        result.assert_outcomes(passed=1)
        recorded = json.loads(cassette.read_text())
        assert "reference" == recorded["recorded"]["runtime"]
        assert KEY not in cassette.read_text()
        # once: a cassette that exists is replayed, not recorded again
        before = cassette.stat().st_mtime_ns
        run(project, "--crash-record-mode=once", "tests").assert_outcomes(passed=1)
        assert before == cassette.stat().st_mtime_ns
    # No provider now: the default mode replays from the file alone.
    monkeypatch.delenv("OPENAI_BASE_URL")
    run(project, "tests").assert_outcomes(passed=1)
    assert before == cassette.stat().st_mtime_ns
    # rewrite records again: with the provider gone, it says it cannot.
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    result = run(project, "--crash-record-mode=rewrite", "tests")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [f"*killpoint: --crash-record-mode: cannot record cassette '{cassette}': *"]
    )
    assert before == cassette.stat().st_mtime_ns  # nothing half-written


@pytest.mark.usefixtures("own_tmpdir")
def test_a_stale_cassette_fails_and_rewrite_records_the_edited_agent(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Recorded from one prompt, checked with the agent's prompt edited: the test fails
    saying the cassette is stale and how to record it again; rewrite records the edited
    agent, from the inputs the cassette holds, and the check passes."""
    folder = project.path / "tests" / "cassettes"
    folder.mkdir()
    write_test(
        project,
        f"""
def test_agent(crash):
    crash.check("{AGENTS}:thorough", cassette="cassettes/agent.json", {SMALL})
""",
    )
    from killpoint.recording.record import Plan, record

    with provider(project.path / "p") as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        record(Plan(f"{AGENTS}:brief", folder / "agent.json", inputs=("Research it.",)))
        stale = run(project, "tests")
        stale.assert_outcomes(failed=1)
        stale.stdout.fnmatch_lines(
            [
                "*the cassette is stale: the agent's first request no longer matches*",
                "*record the cassette again: pytest --crash-record-mode=rewrite*",
            ],
            consecutive=False,
        )
        run(project, "--crash-record-mode=rewrite", "tests").assert_outcomes(passed=1)
    rewritten = json.loads((folder / "agent.json").read_text())
    assert f"{AGENTS}:thorough" == rewritten["recorded"]["runtime"]
    assert ["Research it."] == rewritten["inputs"]
    monkeypatch.delenv("OPENAI_BASE_URL")
    run(project, "tests").assert_outcomes(passed=1)


@pytest.mark.usefixtures("own_tmpdir")
def test_the_marker_runs_each_cassette_of_a_folder_as_an_item(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder = project.path / "tests" / "cassettes"
    folder.mkdir()
    from killpoint.recording.record import Plan, record

    with provider(project.path / "p") as url:
        monkeypatch.setenv("OPENAI_BASE_URL", url)
        record(Plan("reference", folder / "research.json", scenario="research"))
    monkeypatch.delenv("OPENAI_BASE_URL")
    shutil.copy(folder / "research.json", folder / "again.json")
    (folder / "notes.txt").write_text("not a cassette")
    write_test(
        project,
        f"""
import pytest

@pytest.mark.crash_cassettes("cassettes")
def test_agent(crash):
    found = crash.check("reference", {SMALL})
    assert 4 == len(found)
""",
    )
    result = run(project, "-v", "tests")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*test_agent.py::test_agent[[]again] PASSED*",
            "*test_agent.py::test_agent[[]research] PASSED*",
        ]
    )


def test_the_marker_on_an_empty_folder_is_a_collection_error(project: pytest.Pytester) -> None:
    (project.path / "tests" / "cassettes").mkdir()
    write_test(
        project,
        """
import pytest

@pytest.mark.crash_cassettes("cassettes")
def test_agent(crash):
    crash.check("reference")
""",
    )
    result = project.runpytest("tests")
    result.assert_outcomes(errors=1)
    folder = project.path / "tests" / "cassettes"
    result.stdout.fnmatch_lines(
        [
            f"*killpoint: @pytest.mark.crash_cassettes('cassettes'): no cassette (*.json) in {folder}*"
        ]
    )
