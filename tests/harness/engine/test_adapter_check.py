"""`killpoint check-adapter`: each check catches its own broken adapter, and only that one."""

# ruff: noqa: SIM300
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import psutil
import pytest

from killpoint.engine.adapter_check import (
    FAIL,
    NAMES,
    PASS,
    SKIP,
    _checkpoint_gates,
    engine_for,
    mid_run_checkpoints,
    run_checks,
)
from killpoint.engine.options import runtime_adapter
from killpoint.scenarios import gates
from killpoint.values.modes import find
from killpoint.values.scenario_refs import resolve_scenario

REPO = Path(__file__).resolve().parents[3]
BROKEN = "tests.harness.broken_adapters"

pytestmark = pytest.mark.slow


def statuses(runtime: str, tmp_path: Path, mode: str = "tool-batch") -> dict[str, str]:
    engine = engine_for("sqlite", 30.0, tmp_path)
    adapter = runtime_adapter(runtime)
    row = (runtime, "research", mode, "sqlite")
    checks = run_checks(engine, row, resolve_scenario("research"), find(adapter.modes, mode))
    assert list(NAMES) == [c.name for c in checks]
    for c in checks:
        assert c.status in (PASS, FAIL, SKIP)
        assert (c.status == FAIL) == bool(c.hint), c  # a failure always has its hint
    return {c.name: c.status for c in checks}


def test_the_reference_adapter_passes_every_check(tmp_path: Path) -> None:
    assert {n: PASS for n in NAMES} == statuses("reference", tmp_path)


@pytest.mark.parametrize(
    ("broken", "caught_by"),
    [
        ("Unnormal", "normal form"),
        ("Ungated", "checkpoint gates"),
        ("Overcounting", "progress"),
        ("TextProgress", "progress"),
        ("RaisingInspect", "inspect"),
        ("Misdeclared", "mode"),
        ("ignores_mode", "mode"),
        ("Stamped", "deterministic"),
        ("Unresumable", "resume"),
    ],
)
def test_each_broken_adapter_fails_only_its_own_check(
    broken: str, caught_by: str, tmp_path: Path
) -> None:
    found = statuses(f"{BROKEN}:{broken}", tmp_path)
    assert [caught_by] == [n for n, s in found.items() if s == FAIL], found
    # Checks before it passed; checks after it passed or were skipped for its sake.
    before = NAMES[: NAMES.index(caught_by)]
    assert all(found[n] == PASS for n in before if n != "resume"), found


def test_a_baseline_that_cannot_run_skips_every_other_check(tmp_path: Path) -> None:
    found = statuses(f"{BROKEN}:NeverStarts", tmp_path)
    assert FAIL == found["baseline"]
    assert {SKIP} == {found[n] for n in NAMES[1:]}


def check_adapter(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "check-adapter", *args],
        cwd=REPO, capture_output=True, text=True, timeout=240, env=dict(os.environ),
    )  # fmt: skip


def test_the_command_prints_a_line_per_check_and_a_hint_per_failure() -> None:
    result = check_adapter("--runtime", f"{BROKEN}:Overcounting")
    assert 1 == result.returncode, result.stderr
    lines = result.stdout.splitlines()
    assert (
        "checking tests.harness.broken_adapters:Overcounting/research/tool-batch/sqlite"
        == (lines[0])
    )
    assert [n for n in NAMES] == [line[6:].split("  ")[0].strip() for line in lines if
                                  line[:4] in ("PASS", "FAIL", "SKIP")]  # fmt: skip
    failed = next(n for n, line in enumerate(lines) if line.startswith("FAIL"))
    assert "progress() said 6 after the baseline; 5 checkpoints landed" in lines[failed]
    assert "hint: progress(store_url, session_id) counts" in lines[failed + 1]
    assert "1 check failed" == lines[-1]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--runtime", "kp_no_such_module:adapter"], "pythonpath = ."),
        (["--runtime", "reference", "--mode", "fast"], "--mode='fast': not a mode"),
        (["--runtime", "reference", "--scenario", "nope"], "--scenario='nope': unknown scenario"),
        (["--runtime", "langgraph", "--scenario", "cancel"], "no run cancellation"),
        (["--runtime", f"{BROKEN}:Ungated", "--timeout", "0"], "--timeout='0'"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(args: list[str], named: str) -> None:
    result = check_adapter(*args)
    assert 2 == result.returncode
    assert named in result.stderr
    assert 1 == len(result.stderr.strip().splitlines()), result.stderr
    assert "" == result.stdout


def test_a_lagging_mode_counts_checkpoints_landed_while_the_next_turn_runs() -> None:
    """LangGraph's async durability lands a batch's checkpoint while the next model turn
    is already under way, never right after the tool call: declared `writes_lag`, that
    is a mid-run checkpoint; a checkpoint landing only once the last turn began is not."""
    fetch = gates.tool_gate("fetch", {"url": "a"}, "finished")
    trace = [
        gates.model_gate(1),
        fetch,
        gates.model_gate(2),
        gates.checkpoint_gate(1, "landed"),
        gates.model_gate(3),
        gates.checkpoint_gate(2, "landed"),
    ]
    assert (0, 1) == (mid_run_checkpoints(trace), mid_run_checkpoints(trace, lagging=True))
    at_rest_only = [gates.model_gate(1), fetch, gates.model_gate(2), *trace[-1:]]
    assert 0 == mid_run_checkpoints(at_rest_only, lagging=True)


def test_an_adapter_call_that_never_returns_fails_its_check_and_the_command_ends() -> None:
    """read_session() hangs in check-adapter's own process: past --timeout the normal-form
    check fails with a line naming the call and the limit, the command exits 1, and none
    of its processes is left."""
    result = check_adapter(
        "--runtime", "tests.harness.misbehaving_adapters:HangingReadSession", "--timeout", "5"
    )
    assert 1 == result.returncode, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    failed = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    assert failed and "normal form" in failed[0]
    assert "the adapter's read_session() did not return within the time limit (5.0 s)" in failed[0]
    assert not [p for p in psutil.process_iter(["cmdline"])
                if "HangingReadSession" in " ".join(p.info["cmdline"] or [])]  # fmt: skip


def _baseline_check(runtime: str, tmp_path: Path, timeout: float) -> Any:
    engine = engine_for("sqlite", timeout, tmp_path)
    adapter = runtime_adapter(runtime)
    row = (runtime, "research", "every-batch", "sqlite")
    checks = run_checks(
        engine, row, resolve_scenario("research"), find(adapter.modes, "every-batch")
    )
    return checks[0]


def test_a_client_the_model_never_heard_from_is_told_of_local_model(tmp_path: Path) -> None:
    """A runtime whose model client is not the openai SDK's, without the local address:
    the hint says the model received nothing, names the row's cell, says how to ask for
    the local address, and the folder it names is there, with the worker's log."""
    runtime = "tests.harness.chat_runtime:not_local"
    check = _baseline_check(runtime, tmp_path, 30.0)
    assert ("baseline", FAIL) == (check.name, check.status)
    assert f"{runtime}/research/every-batch/sqlite" in check.hint
    assert "received no request" in check.hint
    assert "`local_model = True`" in check.hint
    folder = Path(check.hint.split("The run's folder is kept: ")[1].split(" (")[0])
    assert (folder / "baseline.log").is_file()
    assert "replay" not in check.hint and "--keep" not in check.hint  # check-adapter has neither


def test_a_hung_baseline_says_which_requests_the_model_does_not_serve(tmp_path: Path) -> None:
    """A client that asks for GET /v1/models and then waits for ever: past --timeout, the
    hint lists what the model received and which of it no format serves."""
    check = _baseline_check("tests.harness.chat_runtime:hanging", tmp_path, 4.0)
    assert (FAIL, "timeout") == (check.status, check.detail.split("(")[1].split(")")[0])
    assert "hung (past --timeout)" in check.hint
    assert "it does not serve 1 × GET /v1/models" in check.hint
    assert "POST …/v1/chat/completions" in check.hint  # what it does answer


def failed_lines(result: subprocess.CompletedProcess[str]) -> tuple[str, str]:
    """The one FAIL line of a check-adapter run, and the hint under it."""
    lines = result.stdout.splitlines()
    failed = [n for n, line in enumerate(lines) if line.startswith("FAIL")]
    assert 1 == len(failed), result.stdout + result.stderr
    return lines[failed[0]], lines[failed[0] + 1]


def test_a_progress_of_the_wrong_type_is_said_by_its_type_as_the_matrix_says_it() -> None:
    """progress() returned "5" for 5 checkpoints: the line says it returned a str (as a
    matrix cell's adapter-error says it), never "said 5 ...; 5 checkpoints landed"."""
    result = check_adapter("--runtime", f"{BROKEN}:TextProgress")
    assert 1 == result.returncode, result.stdout + result.stderr
    line, hint = failed_lines(result)
    assert line.startswith("FAIL  progress")
    assert (
        "the adapter's progress() returned str '5'; it returns the number of checkpoints "
        "landed (an int)"
    ) in line
    assert "said 5" not in line
    assert "hint: progress(store_url, session_id) counts" in hint


@pytest.mark.parametrize(
    ("broken", "call"),
    [("RaisingDriverFactory", "driver()"), ("RaisingInstrument", "instrument()")],
)
def test_an_adapter_that_raises_before_the_run_is_named_without_a_model_client_hint(
    broken: str, call: str, tmp_path: Path
) -> None:
    """driver() or instrument() raised in the worker before the scenario ran: the hint
    names the call that raised (by the worker's traceback), and says nothing of the
    model's client, which was never in question (the model could not be asked)."""
    result = check_adapter("--runtime", f"{BROKEN}:{broken}", "--work-dir", str(tmp_path))
    assert 1 == result.returncode, result.stdout + result.stderr
    line, hint = failed_lines(result)
    assert line.startswith("FAIL  baseline")
    assert f"hint: the adapter's {call} raised in the worker before the run began" in hint
    assert f"fix {call}" in hint
    other = {"driver()", "instrument()"} - {call}
    assert not any(f"the adapter's {o}" in hint for o in other), hint
    assert "the driver raised" not in hint
    assert "received no request" not in hint
    assert "local_model" not in hint and "model client" not in hint
    folder = Path(hint.split("The run's folder is kept: ")[1].split(" (")[0])
    assert (folder / "baseline.log").is_file()
    assert tmp_path in folder.parents


def test_a_driver_whose_start_raised_is_named_and_the_model_client_only_a_maybe(
    tmp_path: Path,
) -> None:
    """start() raised before the model was asked: the hint names the driver's start(), and
    the model-client advice is conditional (what raised may or may not be the client)."""
    result = check_adapter("--runtime", f"{BROKEN}:NeverStarts", "--work-dir", str(tmp_path))
    assert 1 == result.returncode, result.stdout + result.stderr
    _, hint = failed_lines(result)
    assert "hint: the driver's start() raised in the baseline of" in hint
    assert "received no request before it raised; if what it raised comes from" in hint


def test_a_store_the_adapter_does_not_declare_fails_one_check_and_runs_nothing(
    tmp_path: Path, pg_url: str
) -> None:
    """The adapter stores on SQLite only and says so: on PostgreSQL, one `store` check
    fails naming the fix, and no baseline runs (its driver would raise on the URL)."""
    runtime = "tests.harness.declining_runtimes:sqlite_only"
    engine = engine_for(pg_url, 30.0, tmp_path)
    adapter = runtime_adapter(runtime)
    row = (runtime, "research", "tool-batch", "postgresql")
    checks = run_checks(
        engine, row, resolve_scenario("research"), find(adapter.modes, "tool-batch")
    )
    assert ["store", *NAMES] == [c.name for c in checks]
    store = checks[0]
    assert FAIL == store.status
    assert (
        f"runtime {runtime!r} does not run on a postgresql store: its adapter supports sqlite "
        "only (its `stores`)"
    ) == store.detail
    assert store.hint.startswith("run it with --store sqlite; or, if the runtime does store on ")
    assert "add 'postgresql' to the adapter's `stores`" in store.hint
    # Skipped, not failed: a baseline that ran would fail, its driver raising on the URL.
    assert {SKIP} == {c.status for c in checks[1:]}
    result = subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "check-adapter", "--runtime", runtime,
         "--store", pg_url, "--work-dir", str(tmp_path)],
        cwd=REPO, capture_output=True, text=True, timeout=300, env=dict(os.environ),
    )  # fmt: skip
    assert 1 == result.returncode, result.stdout + result.stderr
    assert "FAIL  store" in result.stdout
    assert "hint: run it with --store sqlite" in result.stdout
    assert "1 check failed" in result.stdout


def test_a_checkpoint_in_several_transactions_is_said_so() -> None:
    """check-adapter said only "5 checkpoints landed" of a runtime whose every checkpoint
    committed three times: a kill between them leaves part of one, which the mid-commit
    cells show without saying why."""
    said: list[tuple[str, str, str]] = []
    trace = [
        "checkpoint:1:writing", "checkpoint:1:committing", "checkpoint:1:landed",
        "checkpoint:2:writing", "checkpoint:2:committing", "checkpoint:2:committing#2",
        "checkpoint:2:committing#3", "checkpoint:2:landed",
    ]  # fmt: skip
    assert 2 == _checkpoint_gates(
        lambda name, state, detail, *_: said.append((name, state, detail)), trace
    )
    assert [("checkpoint gates", PASS, (
        "2 checkpoints landed; committed in several transactions: checkpoint 2 in 3 (a kill "
        "between them leaves part of a checkpoint in the store; mid-commit kills before the "
        "last)"
    ))] == said  # fmt: skip
