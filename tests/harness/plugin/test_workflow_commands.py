"""Hostile run content through the pytest plugin under GitHub Actions: a failing cell's
report (detail, findings, timeline), the `crash` fixture's failure text, killpoint's
summary and a usage error quoting a corpus's text. No line of pytest's output is one a
runner would read as a workflow command, no terminal control sequence reaches it raw,
and the hostile text is there, shown escaped."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.harness.runner_commands import HOSTILE, MARKERS, commands, controls

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[3]
RUNTIME = "tests.harness.hostile_runtimes:Hostile"


@pytest.fixture
def actions(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    monkeypatch.setenv("PYTHONPATH", str(REPO))


def inert(result: pytest.RunResult) -> str:
    text = "\n".join([*result.outlines, *result.errlines])
    assert commands(text) == [], text
    assert controls(text) == [], text
    assert any(m in text for m in MARKERS), text
    return text


def test_failing_cells_and_the_crash_fixture(pytester: pytest.Pytester, actions: None) -> None:
    pytester.makepyfile(
        test_own=f"""
        def test_my_runtime(crash):
            crash.check({RUNTIME!r}, scenario="research", modes="tool-batch",
                        points="after-checkpoint:1")
        """
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "-rA", "--crash-matrix", f"--crash-runtime={RUNTIME}",
        "--crash-scenarios=research", "--crash-modes=tool-batch",
        "--crash-points=after-checkpoint:1", timeout=600,
    )  # fmt: skip
    result.assert_outcomes(failed=2)
    text = inert(result)
    for face in ("  detail:", "  findings:", "  timeline:", "inspect: ok\\n::add-mask::hunter2"):
        assert face in text, face


def test_a_usage_error_quoting_a_corpus(pytester: pytest.Pytester, actions: None) -> None:
    corpus = pytester.path / "c"
    corpus.mkdir()
    (corpus / "corpus.json").write_text(
        json.dumps({"schema": 1, "store": "sqlite", "states": [HOSTILE],
                    "versions": {"killpoint": "x", "python": "3", "runtime": "r", "libraries": {}}})
    )  # fmt: skip
    result = pytester.runpytest_subprocess("-p", "no:randomly", f"--crash-corpus={corpus}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "is not a state id" in inert(result)
