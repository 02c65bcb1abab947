"""A report file is anyone's: every wrong-type variant of a report (at any level: the
document, a cell, a finding, a timeline event, a group, a baseline, a skip, a planned row)
and crafted
cell ids give `killpoint report` one line and exit 2, never a traceback."""

# ruff: noqa: SIM300
from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from killpoint.cli.main import main

CELL_ID = "reference/research/tool-batch/sqlite/after-checkpoint:1"


def document() -> dict[str, Any]:
    """A report as killpoint writes one, every section filled."""
    finding = {
        "kind": "lost-tool-result", "severity": "high", "verdict": "lost", "expected": False,
        "sentence": "the resumed run lost a result", "path": "runs[0].messages[3]",
        "tool": "search", "expected_value": "a", "actual_value": None, "evidence": ["line"],
        "group": "lost-tool-result:search:runs", "sides": ["baseline", "resumed"],
        "facts": {"n": 1},
    }  # fmt: skip
    cell = {
        "id": CELL_ID, "runtime": "reference", "scenario": "research", "mode": "tool-batch",
        "store": "sqlite", "schedule": ["after-checkpoint:1"], "verdict": "lost",
        "expected": False, "duplicates": 0, "bound": 0, "seconds": 1.5,
        "detail": "the resumed run lost a result", "findings": [finding],
        "sides": {"expected": "baseline", "actual": "resumed"},
        "diff": [{"path": "runs[0]", "expected": 1, "actual": 2}], "store_at_crash": {"rows": 1},
        "stderr_tail": "worker said", "timeline": [[0.1, "worker started", "start", "worker"]],
        "exit_codes": [-9, 0], "replay": f"killpoint replay {CELL_ID}", "kept": None,
        "accepted": False,
    }  # fmt: skip
    return {
        "schema": "killpoint.matrix/2", "command": "killpoint matrix", "seed": 1,
        "runtime": "reference", "store": "sqlite", "modes": ["tool-batch"], "points": "all",
        "depth": 1, "versions": {"python": "3.11"}, "interrupted": False,
        "summary": {"cells": 1, "unexpected": 1, "by_verdict": {"lost": 1}, "seconds": 1.0},
        "excluded_from_comparison": ["id"],
        "groups": [{
            "key": "lost-tool-result:search:runs", "kind": "lost-tool-result", "tool": "search",
            "path": "runs[*]", "severity": "high", "verdict": "lost", "meaning": "lost",
            "count": 1, "cells": [CELL_ID], "example": "lost", "example_cell": CELL_ID,
            "replay": "killpoint replay", "accepted": None,
        }],
        "accepted": {"k:x": {"reason": "why", "link": ""}},
        "skipped": [{"runtime": "reference", "scenario": "chain", "mode": "runs",
                     "reason": "no", "point": None, "store": "sqlite"}],
        "baselines": [{"runtime": "reference", "scenario": "research", "mode": "tool-batch",
                       "store": "sqlite", "checkpoints": 3, "seconds": 0.2, "problem": None,
                       "nondeterministic": None, "writes_lag": False, "trace_note": None},
                      {"runtime": "reference", "scenario": "confirm", "mode": "tool-batch",
                       "store": "sqlite", "checkpoints": 2, "seconds": 0.2,
                       "problem": "the baseline run failed (died)", "nondeterministic": None,
                       "writes_lag": False, "trace_note": None, "not_planned": True,
                       "cells_not_planned": 3}],
        "planned_cells": [
            {"runtime": "reference", "scenario": "research", "mode": "tool-batch",
             "store": "sqlite", "schedules": ["after-checkpoint:1", "after-checkpoint:2"]},
            {"runtime": "reference", "scenario": "cancel", "mode": "tool-batch",
             "store": "sqlite", "schedules": None},
        ],
        "cells": [cell],
        "stopped": {
            "reason": "budget", "seconds": 60.2, "budget": 60.0, "ran": 1, "planned": 2,
            "rows": [{"runtime": "reference", "scenario": "research", "mode": "tool-batch",
                      "store": "sqlite", "cells": 2, "ran": 1, "planned": True,
                      "kinds": ["after-checkpoint"], "covered": ["after-checkpoint"]}],
        },
    }  # fmt: skip


def places(doc: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Every field's path in the document."""
    found: list[tuple[Any, ...]] = []

    def walk(value: Any, path: tuple[Any, ...]) -> None:
        if path:
            found.append(path)
        if isinstance(value, dict):
            for k, v in value.items():
                walk(v, (*path, k))
        elif isinstance(value, list):
            for i, v in enumerate(value):
                walk(v, (*path, i))

    walk(doc, ())
    return found


PLACES = places(document())
WRONG = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True), st.text(max_size=5),
    st.lists(st.integers(), max_size=2), st.dictionaries(st.text(max_size=2), st.integers(), max_size=2),
    st.just([[1, "x"]]), st.just({"": None}), st.just(""), st.just("../../etc"),
)  # fmt: skip


def put(doc: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    doc = copy.deepcopy(doc)
    target: Any = doc
    for part in path[:-1]:
        target = target[part]
    target[path[-1]] = value
    return doc


def report(tmp_path: Path, doc: Any, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    source = tmp_path / "r.json"
    source.write_text(json.dumps(doc))
    code = main(["report", str(source), "-o", str(tmp_path / "r.html")])
    return code, capsys.readouterr().err


def test_the_crafted_document_itself_renders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert (0, "") == report(tmp_path, document(), capsys)


def test_a_report_written_before_the_plan_was_kept_still_renders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    old = document()
    del old["planned_cells"]
    assert (0, "") == report(tmp_path, old, capsys)


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("planned_cells",), {"research": []}),
        (("planned_cells", 0, "schedules"), "after-checkpoint:1"),
        (("planned_cells", 0, "schedules", 1), 2),
        (("planned_cells", 1, "scenario"), None),
    ],
)
def test_a_planned_row_of_the_wrong_shape_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: tuple[Any, ...], value: Any
) -> None:
    code, err = report(tmp_path, put(document(), where, value), capsys)
    assert 2 == code
    assert 1 == len(err.strip().splitlines()) and "planned" in err, err


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("stopped",), ["budget"]),
        (("stopped", "ran"), "1"),
        (("stopped", "budget"), "60s"),
        (("stopped", "rows", 0), "research"),
        (("stopped", "rows", 0, "planned"), "yes"),
        (("stopped", "rows", 0, "covered", 0), 3),
    ],
)
def test_a_stopped_section_of_the_wrong_shape_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: tuple[Any, ...], value: Any
) -> None:
    code, err = report(tmp_path, put(document(), where, value), capsys)
    assert 2 == code
    assert 1 == len(err.strip().splitlines()) and "'stopped'" in err, err


@pytest.mark.parametrize(
    ("where", "value"),
    [
        (("baselines", 1, "not_planned"), "yes"),
        (("baselines", 1, "not_planned"), None),
        (("baselines", 1, "cells_not_planned"), "3"),
        (("baselines", 1, "cells_not_planned"), 2.5),
    ],
)
def test_a_row_not_planned_of_the_wrong_shape_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], where: tuple[Any, ...], value: Any
) -> None:
    code, err = report(tmp_path, put(document(), where, value), capsys)
    assert 2 == code
    assert 1 == len(err.strip().splitlines()) and "baseline 1" in err, err


@settings(max_examples=300, deadline=None, suppress_health_check=list(HealthCheck))
@given(where=st.sampled_from(PLACES), value=WRONG)
def test_a_wrong_type_anywhere_is_one_line_and_exit_2(
    tmp_path_factory: pytest.TempPathFactory,
    capsys: pytest.CaptureFixture[str],
    where: tuple[Any, ...],
    value: Any,
) -> None:
    tmp_path = tmp_path_factory.mktemp("r")
    code, err = report(tmp_path, put(document(), where, value), capsys)
    assert code in (0, 2), (where, value)  # never a traceback (it would raise here)
    if code == 2:
        assert 1 == len(err.strip().splitlines()), err


@pytest.mark.parametrize("cell_id", ["", "../../etc", "after-checkpoint:-1", 7, None,
                                     "reference/research/tool-batch/sqlite/after-checkpoint:-1",
                                     "a/b/c/d/../../etc"])  # fmt: skip
def test_crafted_cell_ids_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], cell_id: Any
) -> None:
    code, err = report(tmp_path, put(document(), ("cells", 0, "id"), cell_id), capsys)
    assert 2 == code
    assert 1 == len(err.strip().splitlines()), err


@pytest.mark.parametrize("t", [1.8e305, float("inf"), float("nan"), -1e13, 10**400])
def test_a_time_no_campaign_writes_is_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], t: float
) -> None:
    code, err = report(tmp_path, put(document(), ("cells", 0, "timeline", 0, 0), t), capsys)
    assert 2 == code, err
    assert 1 == len(err.strip().splitlines()), err
    assert "cell 0" in err
