"""What a `crash.check` reports: when it passes, its one-line summary, and the failure
message that lists each unexpected cell with its replay command. (The fixture in a test
run, markers and options included: test_hooks.py.)"""

# ruff: noqa: SIM300
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from killpoint.engine.stop_rule import BUDGET, RowCoverage, Stopped
from killpoint.plugin.crash_fixture import CrashResults
from killpoint.values.cell import CellResult
from killpoint.values.findings import Finding

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[3]

ROW = "shop.agents:build/shop.scenarios:REFUND/tool-batch/sqlite"
OK = CellResult(
    id=f"{ROW}/after-checkpoint:1",
    runtime="shop.agents:build",
    scenario="shop.scenarios:REFUND",
    mode="tool-batch",
    store="sqlite",
    schedule=["after-checkpoint:1"],
    verdict="ok",
    expected=True,
    replay=f"killpoint replay {ROW}/after-checkpoint:1",
)
DIVERGED = replace(
    OK,
    id=f"{ROW}/after-checkpoint:2",
    schedule=["after-checkpoint:2"],
    verdict="diverged",
    expected=False,
    detail="the resumed run ended RUNNING\nand more",
    findings=[
        Finding(
            "status-differs", "run 1 ends RUNNING in the resumed run, COMPLETED in the baseline"
        ).to_json()
    ],
    replay=f"killpoint replay {ROW}/after-checkpoint:2",
)


def results(*cells: CellResult, **fields: object) -> CrashResults:
    values: dict[str, object] = {
        "runtime": "shop.agents:build",
        "scenarios": ("shop.scenarios:REFUND",),
        "seed": 5,
        "cells": list(cells),
    }
    values.update(fields)
    return CrashResults(**values)  # type: ignore[arg-type]


def test_ok_needs_cells_all_expected_and_every_baseline() -> None:
    assert results(OK).ok
    assert not results().ok  # a selection that planned nothing never passes
    assert not results(OK, DIVERGED).ok
    assert not results(OK, problems=["shop/REFUND/tool: boom"]).ok


def test_cells_verdicts_and_the_unexpected_ones() -> None:
    found = results(OK, DIVERGED)

    assert [OK, DIVERGED] == list(found)
    assert 2 == len(found)
    assert [DIVERGED] == found.unexpected
    assert {OK.id: "ok", DIVERGED.id: "diverged"} == found.verdicts()


def test_the_summary_counts_verdicts() -> None:
    assert (
        "killpoint: shop.agents:build on shop.scenarios:REFUND: 3 cells "
        "(1 diverged, 2 ok), 1 unexpected, seed 5"
    ) == str(results(OK, OK, DIVERGED))
    assert (
        "killpoint: shop.agents:build on a, b: 0 cells (no cells), 0 unexpected, seed 5"
    ) == str(results(scenarios=("a", "b")))


def test_the_failure_message_lists_each_unexpected_cell_and_how_to_rerun() -> None:
    found = results(OK, DIVERGED, problems=["shop/REFUND/runs: boom"], work_root=Path("/tmp/kp-1"))

    assert [
        str(found),
        "  baseline failed: shop/REFUND/runs: boom",
        f"  diverged    {DIVERGED.id}",
        "              status-differs: run 1 ends RUNNING in the resumed run, COMPLETED in the baseline",
        f"              replay: {DIVERGED.replay}",
        "  rerun with --crash-seed 5",
        "  kept cells (store, ledger, worker logs) under /tmp/kp-1",
    ] == found.failure_message().splitlines()


def test_every_finding_of_a_cell_is_listed_up_to_four() -> None:
    many = [Finding("messages-differ", f"difference {n}").to_json() for n in range(6)]
    lines = results(replace(DIVERGED, findings=many)).failure_message().splitlines()
    assert "              messages-differ: difference 3" in lines
    assert "              ... and 2 more findings in the JSON" in lines


def test_no_cells_says_why() -> None:
    assert [
        str(results()),
        "  no cells: the selection planned nothing (check points= and modes=)",
    ] == results().failure_message().splitlines()


def test_no_cells_lists_every_skip() -> None:
    skipped = ["REFUND/runs: point after-checkpoint:9 is not in this row"] * 2
    assert [
        str(results()),
        "  no cells ran; skipped:",
        "    REFUND/runs: point after-checkpoint:9 is not in this row",
    ] == results(skipped=skipped).failure_message().splitlines()


def stopped(reason: str, *rows: RowCoverage) -> Stopped:
    return Stopped(reason, seconds=1.2, budget=1.0 if reason == BUDGET else None, rows=list(rows))


ROW_KEY = ("shop.agents:build", "shop.scenarios:REFUND", "tool-batch", "sqlite")


def test_a_check_stopped_early_says_why_and_what_it_covered() -> None:
    """Cells ran and none was unexpected: the check passes, as `killpoint matrix --budget`
    exits 0, and its message (the results' text in a failing test) says it stopped."""
    found = results(
        OK,
        stopped=stopped(
            BUDGET,
            RowCoverage(ROW_KEY, ("after-checkpoint", "mid-batch"), ("after-checkpoint",), 4, 1),
        ),
    )
    assert found.ok
    lines = found.failure_message().splitlines()
    assert (
        "  stopped: it stopped at its time budget (1.0 s): 1 of 4 cells ran; every kind of point "
        "planned ran in 0 of 1 row"
    ) in lines
    assert "    shop.scenarios:REFUND/tool-batch: 1 of 4 cells, 1 of 2 kinds" in lines


def test_a_check_stopped_before_any_cell_names_the_stop_not_the_selection() -> None:
    found = results(stopped=stopped(BUDGET, RowCoverage(ROW_KEY, (), (), 0, 0, planned=False)))
    assert not found.ok
    message = found.failure_message()
    assert "stopped: it stopped at its time budget (1.0 s): 0 of 0 cells ran" in message
    assert (
        "shop.scenarios:REFUND/tool-batch: its baseline did not finish; no cell planned" in message
    )
    assert "the selection planned nothing" not in message


def test_a_finding_without_a_crash_fails_the_check_and_is_listed() -> None:
    """A row whose uninterrupted run breaks the contract fails crash.check even when every
    cell is expected, and the message names it."""
    line = (
        f"{ROW}: cancel-late: model turn(s) 4 were requested (group cancel-late:-:model@no-crash)"
    )
    found = results(OK, without_crash=[line])
    assert not found.ok
    message = found.failure_message()
    assert f"  without a crash: {line}" in message
    assert "rerun with --crash-seed 5" in message


@pytest.mark.slow
def test_crash_check_runs_fast_unless_told_and_reads_the_ini(pytester: pytest.Pytester) -> None:
    """One run of the pytest front: the ini keys set the session's campaign (its modes, its
    time limit), and crash.check takes kills= like every other option the table gives it;
    by default its kill cells resume from their row's traced copies, as `killpoint matrix`
    does."""
    pytester.makeini("[pytest]\ncrash_modes = tool-batch\ncrash_timeout = 25\n")
    pytester.makepyfile(
        test_kills="""
        def traced(results):
            return [any("traced worker (pid" in e.text for e in c.timeline) for c in results]

        def test_fast_by_default(crash):
            results = crash.check(scenario="research", points="after-checkpoint:1,after-checkpoint:2")
            assert [c.mode for c in results] == ["tool-batch", "tool-batch"]
            assert crash._config(None, None, {}).timeout == 25.0
            assert traced(results) == [True, True]

        def test_real_when_told(crash):
            results = crash.check(
                scenario="research", points="after-checkpoint:1,after-checkpoint:2", kills="real"
            )
            assert traced(results) == [False, False]
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", timeout=240)
    result.assert_outcomes(passed=2)


@pytest.mark.slow
def test_the_summary_names_each_checks_own_seed_and_its_stop(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A crash.check with a seed of its own and one stopped at its first unexpected cell:
    the session's summary gives the seed each test's cells ran with, not the session's
    alone, and says which check stopped and what it covered."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    pytester.makepyfile(
        test_own="""
        def test_own_seed(crash):
            crash.check(scenario="research", modes="tool-batch", points="after-checkpoint:1", seed=5)

        def test_stops(crash):
            found = crash.run("tests.harness.broken_runtimes:no_truncate", scenario="research",
                              modes="tool-batch", fail_fast=True, seed=7)
            assert found.stopped is not None and found.unexpected
        """
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--crash-seed=9", timeout=240)
    result.assert_outcomes(passed=2)
    text = "\n".join(result.outlines)
    assert "; seeds: 5 (test_own.py::test_own_seed); 7 (test_own.py::test_stops)" in text, text
    assert "seed 9" not in text, text
    assert (
        "stopped: test_own.py::test_stops: it stopped at its first unexpected cell (--fail-fast)"
    ) in text, text


def test_an_unknown_option_is_named_where_it_was_given(pytester: pytest.Pytester) -> None:
    """A typo in the `killpoint` marker is the marker's, not the crash.check call's; a typo
    in the call is the call's; each with the nearest option. Nothing runs."""
    pytester.makepyfile(
        test_typos="""
        import pytest

        @pytest.mark.killpoint(mode="every-batch")
        def test_marker_typo(crash):
            crash.check(scenario="research")

        def test_call_typo(crash):
            crash.check(scenario="research", point="boundaries")
        """
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=2)
    text = "\n".join(result.outlines)
    assert (
        "killpoint: @pytest.mark.killpoint got unknown option 'mode'; did you mean 'modes'? "
        "choose from runtime, scenario, "
    ) in text, text
    assert (
        "killpoint: crash.check got unknown option 'point'; did you mean 'points'? "
        "choose from runtime, scenario, "
    ) in text, text
    assert "(in crash.check)" not in text
