"""The journal holds what the campaign held: read back, it rebuilds the very document the
campaign would have written, whatever cut it off."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from killpoint.engine.campaign import CampaignConfig, CampaignResult, Skipped
from killpoint.engine.cell_log import CellLog
from killpoint.errors import ReportError
from killpoint.report.document import head, read_json, to_document
from killpoint.report.journal import Journal, journal_path, read_journal, write_rebuilt
from killpoint.values.cell import CellResult
from killpoint.values.findings import Finding
from tests.harness.engine.test_cell_log import cell as plain_cell


def cell(n: int, verdict: str) -> CellResult:
    """A cell with findings a report groups: an expected loss, or a status that differs."""
    made = plain_cell(n, verdict)
    finding = (
        Finding("run-lost", "the run is gone", path="runs[0]", expected=True)
        if verdict == "lost"
        else Finding("status-differs", f"ended {n}", path="runs[0].status")
    )
    made.findings = [finding.to_json()]
    made.expected = verdict == "lost"
    made.verdict = finding.verdict
    return made


def result_of(n: int) -> CampaignResult:
    config = CampaignConfig.from_options(scenarios="research", modes="tool-batch")
    cells = [cell(k, "ok" if k % 2 else "lost") for k in range(1, n + 1)]
    result = CampaignResult(config, 7, CellLog(cells), planned=n + 2, seconds=2.5)
    result.skipped = [Skipped("reference", "confirm", "runs", "a reason")]
    # Two cells planned that do not run, and a row stopped before its cells were planned.
    row = ("reference", "research", "tool-batch", "sqlite")
    result.plan = {row: [f"after-checkpoint:{k}" for k in range(1, n + 3)]}
    result.plan["reference", "cancel", "tool-batch", "sqlite"] = None
    return result


def journal_of(tmp_path: Path, result: CampaignResult, *, end: bool = True) -> Path:
    top = head(result.config, result.seed, result.accepted, ["killpoint", "matrix"])
    path = journal_path(tmp_path / "m.json")
    journal = Journal(path, tmp_path / "m.json", top)
    journal.planned(result)
    for c in result.cells:
        journal.finished(c)
    if end:
        journal.ended(result)
    journal.close()
    return path


def without_time(document: dict[str, Any]) -> dict[str, Any]:
    summary = {
        k: v for k, v in document["summary"].items() if k not in ("seconds", "cells_per_second")
    }
    return {**document, "summary": summary}


def test_a_journal_rebuilds_the_document_the_campaign_writes(tmp_path: Path) -> None:
    result = result_of(5)
    path = journal_of(tmp_path, result)
    assert "m.journal.jsonl" == path.name
    left = read_journal(path)
    assert (5, True, "m.json") == (left.cells, left.finished, left.json_name)
    assert to_document(result, ["killpoint", "matrix"]) == left.document
    assert [7, None] == [  # the plan too: what tells "not run" from "not applicable"
        None if r["schedules"] is None else len(r["schedules"])
        for r in left.document["planned_cells"]
    ]


def test_a_journal_without_its_end_is_an_interrupted_campaign(tmp_path: Path) -> None:
    """Killed before its end: the cells it finished, marked interrupted, the seconds those
    took; a last line cut short by the kill is left out."""
    result = result_of(4)
    path = journal_of(tmp_path, result, end=False)
    with open(path, "a") as f:
        f.write('{"cell": {"id": "reference/research/tool-batch/sqlite/aft')
    left = read_journal(path)
    assert not left.finished
    assert 4 == len(left.document["cells"])
    assert left.document["interrupted"] is True
    result.interrupted = True
    assert without_time(to_document(result, ["killpoint", "matrix"])) == without_time(left.document)


def test_a_rebuilt_report_reads_back_as_a_report(tmp_path: Path) -> None:
    left = read_journal(journal_of(tmp_path, result_of(3)))
    write_rebuilt(left, tmp_path / "r.json", tmp_path / "r.html")
    assert 3 == len(read_json(tmp_path / "r.json")["cells"])
    assert "<html" in (tmp_path / "r.html").read_text()


@pytest.mark.parametrize(
    "text", ["", "not json\n", '{"journal": "other/1"}\n', '{"schema": "killpoint.matrix/2"}\n']
)
def test_a_file_that_is_not_a_journal_is_named(tmp_path: Path, text: str) -> None:
    path = tmp_path / "x.journal.jsonl"
    path.write_text(text)
    with pytest.raises(ReportError, match="is not a killpoint journal"):
        read_journal(path)


def test_each_line_is_one_object_and_secrets_are_masked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SOME_API_KEY", "sk-very-secret-value")
    result = result_of(2)
    stored = result.cells[0]
    stored.detail = "the key sk-very-secret-value leaked"
    result.cells = CellLog([stored, result.cells[1]])
    path = journal_of(tmp_path, result)
    text = path.read_text()
    assert "sk-very-secret-value" not in text
    assert [dict] * 5 == [type(json.loads(line)) for line in text.splitlines()]
