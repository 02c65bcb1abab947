"""cassette_parity matches cells across scenario names and names the classes a cassette
misses; it runs end to end on its smallest input (where agno is installed)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.benchmarks.cassette_parity import compare
from tests.benchmarks.smoke import run_benchmark


def _cell(scenario: str, schedule: str, verdict: str, *groups: str) -> dict[str, Any]:
    return {
        "id": f"agno/{scenario}/tool-batch/sqlite/{schedule}",
        "mode": "tool-batch",
        "store": "sqlite",
        "schedule": [schedule],
        "verdict": verdict,
        "expected": verdict == "ok",
        "findings": [{"kind": g.split(":")[0], "group": g} for g in groups],
    }


def _report(scenario: str, *cells: dict[str, Any]) -> dict[str, Any]:
    return {"runtime": "agno", "command": scenario, "cells": list(cells)}


def test_a_class_the_cassette_misses_at_one_cell_is_named_there() -> None:
    lost = "tool-executions-lost:-:runs[*].tool_executions"
    builtin = _report(
        "research",
        _cell("research", "after-checkpoint:1", "diverged", lost),
        _cell("research", "after-checkpoint:2", "diverged", lost),
    )
    cassette = _report(
        "cassette:c.json",
        _cell("cassette:c.json", "after-checkpoint:1", "diverged", lost),
        _cell("cassette:c.json", "after-checkpoint:2", "ok"),
    )
    lines, complete = compare([builtin], [cassette])
    assert not complete
    row = next(line for line in lines if line.startswith(lost))
    assert row.split()[1:] == ["2", "0", "1", "1", "0"]
    assert f"missed {lost} at: tool-batch/after-checkpoint:2" in lines
    assert "cells of a steady built-in verdict no cassette run gives: 1" in "\n".join(lines)


def test_a_cell_only_some_built_in_runs_find_a_class_in_is_flaky_not_missed() -> None:
    dup = "effect-duplicated:fetch_detail:ledger"
    first = _report("research", _cell("research", "double-resume:1", "duplicated", dup))
    second = _report("research", _cell("research", "double-resume:1", "ok"))
    cassette = _report("cassette:c.json", _cell("cassette:c.json", "double-resume:1", "ok"))
    lines, complete = compare([first, second], [cassette])
    assert complete
    row = next(line for line in lines if line.startswith(dup))
    assert row.split()[1:] == ["0", "1", "0", "0", "0"]
    assert "cells whose verdict differs between built-in runs: 1" in lines


def test_the_same_classes_at_the_same_cells_are_complete() -> None:
    group = "effect-repeated:fetch_detail:ledger"
    builtin = _report("research", _cell("research", "mid-batch:1:0", "ok", group))
    cassette = _report("cassette:x", _cell("cassette:x", "mid-batch:1:0", "ok", group))
    lines, complete = compare([builtin], [cassette])
    assert complete
    assert lines[-1].endswith("yes")


def test_it_records_runs_both_campaigns_and_prints_the_table() -> None:
    pytest.importorskip("agno")
    out = run_benchmark(
        "cassette_parity",
        *("--runtime", "agno", "--modes", "tool-batch", "--points", "after-checkpoint:1"),
        *("--workers", "1"),
    )
    assert "cells: built-in 1, cassette 1, in both 1" in out
    assert "tool-executions-lost:-:runs[*].tool_executions" in out
    assert "every built-in class found where every built-in run finds it: yes" in out
