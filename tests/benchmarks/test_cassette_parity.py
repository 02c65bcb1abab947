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
    lines, complete = compare(builtin, cassette)
    assert not complete
    row = next(line for line in lines if line.startswith(lost))
    assert row.split()[1:5] == ["2", "1", "1", "0"]
    assert row.endswith("tool-batch/after-checkpoint:2")
    assert "cells whose verdict (or its being expected) differs: 1" in "\n".join(lines)


def test_the_same_classes_at_the_same_cells_are_complete() -> None:
    group = "effect-repeated:fetch_detail:ledger"
    builtin = _report("research", _cell("research", "mid-batch:1:0", "ok", group))
    cassette = _report("cassette:x", _cell("cassette:x", "mid-batch:1:0", "ok", group))
    lines, complete = compare(builtin, cassette)
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
    assert "every built-in class found where the built-in finds it: yes" in out
