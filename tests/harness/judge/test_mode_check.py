"""The mode's declaration against the baseline's trace: every way a runtime can break it is
a problem (both directions, results per call), what a trace cannot show is not; and in a
campaign a row that breaks it fails, in `killpoint matrix` and in `crash.check`, instead of
having its kills called expected losses."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from killpoint.judge.mode_check import (
    check_mode,
    mid_run_checkpoints,
    mid_run_replies,
    short_batches,
)
from killpoint.scenarios import gates
from killpoint.values.modes import RUNS, TOOL, TOOL_BATCH, Mode

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[3]
BROKEN = "tests.harness.broken_adapters"

LAGGING = Mode("async", "written behind the run", writes_lag=True)
REPLIES = Mode("model-steps", "the replies durable, no tool result", tool_results_durable=False)


def call(name: str, phase: str) -> str:
    return gates.tool_gate(name, {"q": name}, phase)


def landed(n: int) -> str:
    return gates.checkpoint_gate(n, "landed")


def batch(*names: str) -> list[str]:
    return [*(call(n, "started") for n in names), *(call(n, "finished") for n in names)]


RUN = gates.run_gate(1, "start")
M1, M2, M3 = gates.model_gate(1), gates.model_gate(2), gates.model_gate(3)
AT_REST_ONLY = [RUN, M1, *batch("a"), M2, *batch("b"), M3, landed(1)]
PER_BATCH = [RUN, M1, *batch("a", "b"), landed(1), M2, landed(2)]
PER_CALL = [RUN, M1, *batch("a", "b"), landed(1), landed(2), landed(3), M2, landed(4)]
# Each model reply recorded as it comes, no tool result ever (the last write is the run's end).
REPLIES_ONLY = [RUN, M1, landed(1), *batch("a"), M2, landed(2), *batch("b"), M3, landed(3)]


def test_a_mode_that_persists_mid_run_must_show_a_checkpoint_after_a_tool_call() -> None:
    found = check_mode(TOOL_BATCH, [AT_REST_ONLY, AT_REST_ONLY])
    assert [
        "mode 'tool-batch' declares persists_mid_run=True, but no checkpoint landed after a "
        "tool call while the run went on (it wrote only when the run came to rest)"
    ] == list(found.problems)
    assert () == check_mode(TOOL_BATCH, [PER_BATCH, PER_BATCH]).problems


def test_a_mode_that_writes_only_at_rest_must_not_persist_mid_run() -> None:
    found = check_mode(RUNS, [AT_REST_ONLY, PER_BATCH])
    assert [
        "mode 'runs' declares persists_mid_run=False, but 1 checkpoint landed after a "
        "tool call, the run going on"
    ] == list(found.problems)
    assert () == check_mode(RUNS, [AT_REST_ONLY, AT_REST_ONLY]).problems


def test_a_terminal_write_right_after_a_tool_call_is_the_run_coming_to_rest() -> None:
    """A cancel honoured right after a batch: the CANCELLED write follows a tool call, and
    no step of the run comes after it."""
    cancelled = [RUN, M1, *batch("a"), M2, *batch("b"), landed(1)]
    assert 0 == mid_run_checkpoints(cancelled)
    assert () == check_mode(RUNS, [cancelled]).problems
    next_run = [*cancelled, gates.run_gate(2, "start"), gates.model_gate(3)]
    assert 0 == mid_run_checkpoints(next_run)


def test_a_results_per_call_mode_lands_a_checkpoint_per_call() -> None:
    assert [(1, 2, 1)] == short_batches(PER_BATCH)
    assert [] == short_batches(PER_CALL)
    found = check_mode(TOOL, [PER_CALL, PER_BATCH])
    assert [
        "mode 'tool' declares persists_mid_run=True, results_per_call=True, but tool batch 1 "
        "finished 2 calls with 1 checkpoint landed before the next model turn"
    ] == list(found.problems)
    assert () == check_mode(TOOL, [PER_CALL, PER_CALL]).problems


def test_a_mode_without_durable_tool_results_persists_its_replies_and_nothing_else() -> None:
    assert (2, 0) == (mid_run_replies(REPLIES_ONLY), mid_run_checkpoints(REPLIES_ONLY))
    assert () == check_mode(REPLIES, [REPLIES_ONLY, REPLIES_ONLY]).problems
    declared = "mode 'model-steps' declares persists_mid_run=True, tool_results_durable=False"
    assert [
        f"{declared}, but no checkpoint landed after a model turn while the run went on "
        "(it wrote only when the run came to rest)"
    ] == list(check_mode(REPLIES, [AT_REST_ONLY]).problems)
    assert [
        f"{declared}, but 1 checkpoint landed after a tool call, the run going on (a tool's "
        "result was written)"
    ] == list(check_mode(REPLIES, [REPLIES_ONLY, PER_BATCH]).problems)


def test_what_a_trace_cannot_show_is_not_held_against_the_mode() -> None:
    no_tools = [RUN, M1, landed(1)]
    assert () == check_mode(TOOL_BATCH, [no_tools]).problems
    assert ("the scenario makes no tool call",) == check_mode(TOOL_BATCH, [no_tools]).unseen
    # Writes that lag may all land after the last turn began: the cells are judged on what
    # the store holds, so the trace's race is not a broken promise.
    late = [RUN, M1, *batch("a"), M2, landed(1), landed(2)]
    found = check_mode(LAGGING, [late, late])
    assert () == found.problems
    assert found.unseen


# -- in a campaign ------------------------------------------------------------------------------


def matrix(tmp_path: Path, runtime: str, mode: str) -> tuple[int, str, dict]:  # type: ignore[type-arg]
    out = tmp_path / f"{mode}.json"
    result = subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "matrix", "--runtime", runtime,
         "--scenarios", "research", "--modes", mode, "--points", "boundaries,mid-model",
         "--json", str(out), "--report", str(tmp_path / f"{mode}.html"),
         "--work-dir", str(tmp_path), "--keep", "none"],
        cwd=REPO, capture_output=True, text=True, timeout=300, env=dict(os.environ),
    )  # fmt: skip
    return result.returncode, result.stdout + result.stderr, json.loads(out.read_text())


@pytest.mark.slow
@pytest.mark.parametrize(
    ("runtime", "mode", "evidence"),
    [
        (f"{BROKEN}:ignores_mode", "tool-batch", "no checkpoint landed after a tool call"),
        (f"{BROKEN}:always_batches", "runs", "4 checkpoints landed after a tool call"),
    ],
)
def test_a_runtime_that_breaks_its_mode_fails_the_matrix(
    runtime: str, mode: str, evidence: str, tmp_path: Path
) -> None:
    """A factory that ignores the mode it is given: without the check, its tool-batch row
    planned only kills mid-model and called each an expected loss (exit 0)."""
    code, output, document = matrix(tmp_path, runtime, mode)
    assert 1 == code, output
    kinds = [f["kind"] for c in document["cells"] for f in c["findings"]]
    assert ["mode-broken"] == kinds, kinds
    (cell,) = document["cells"]
    assert (cell["verdict"], cell["expected"]) == ("diverged", False)
    assert evidence in cell["detail"]
    assert 0 == document["summary"]["expected_losses"]
    assert "mode-broken" in output


@pytest.mark.slow
def test_a_runtime_that_breaks_its_mode_fails_crash_check(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    pytester.makepyfile(
        test_own=f"""
def test_ignoring_factory(crash):
    crash.check("{BROKEN}:ignores_mode", scenario="research", modes="tool-batch",
                points="boundaries,mid-model")
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", timeout=300)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*baseline failed: *research/tool-batch: mode 'tool-batch' declares "
         "persists_mid_run=True, but no checkpoint landed after a tool call*",
         "  diverged    *ignores_mode/research/tool-batch/sqlite/*",
         "*mode-broken: *"],
        consecutive=False,
    )  # fmt: skip
