"""The campaign as JUnit XML: a case per cell classed by row, failures with their
findings and replay, accepted cells and skipped rows as skips, every text masked and
made visible (XML 1.0 cannot carry control characters)."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from killpoint.engine.campaign import CampaignResult, Skipped
from killpoint.engine.cell_log import CellLog
from killpoint.engine.options import CampaignConfig
from killpoint.redaction import remember
from killpoint.report.document import to_document
from killpoint.report.junit import render
from killpoint.values.cell import CellResult
from killpoint.values.findings import Finding
from tests.harness.failed_baseline import (
    PROBLEM,
    RUNTIME,
    document_of,
    failed_row,  # noqa: F401  (a fixture)
    run,
)
from tests.harness.report.test_terminal import interrupted_result
from tests.harness.runner_commands import HOSTILE, controls

SECRET = "hunter2-very-secret"


def cell(point: str, finding: Finding | None = None, **extra: object) -> CellResult:
    cell_id = f"reference/research/tool-batch/sqlite/{point}"
    made = CellResult(
        id=cell_id,
        runtime="reference",
        scenario="research",
        mode="tool-batch",
        store="sqlite",
        schedule=[point],
        verdict=finding.verdict if finding else "ok",
        expected=finding is None,
        seconds=0.5,
        detail=finding.sentence if finding else "",
        findings=[finding.to_json()] if finding else [],
        replay=f"killpoint replay {cell_id}",
    )
    for key, value in extra.items():
        setattr(made, key, value)
    return made


def campaign(*cells: CellResult) -> ET.Element:
    result = CampaignResult(CampaignConfig(), 42, CellLog(list(cells)), seconds=3.0)
    result.skipped = [Skipped("reference", "confirm", "runs", "the mode cannot pause")]
    return ET.fromstring(render(to_document(result)))


class TestCases:
    def test_each_cell_is_a_case_classed_by_its_row(self) -> None:
        """classname killpoint.RUNTIME/SCENARIO/MODE, name STORE/SCHEDULE, its properties."""
        suite = campaign(cell("after-checkpoint:1")).find("testsuite")
        assert suite is not None
        case = suite.find("testcase")
        assert case is not None
        assert case.get("classname") == "killpoint.reference/research/tool-batch"
        assert case.get("name") == "sqlite/after-checkpoint:1"
        props = {p.get("name"): p.get("value") for p in case.iter("property")}
        assert props["seed"] == "42"
        assert (
            props["replay"]
            == "killpoint replay reference/research/tool-batch/sqlite/after-checkpoint:1"
        )
        assert (suite.get("tests"), suite.get("failures"), suite.get("skipped")) == ("2", "0", "1")

    def test_an_unexpected_cell_fails_with_its_findings_and_replay(self) -> None:
        """The failure's text: the findings, the replay command, the kept folder."""
        lost = Finding("run-lost", "the run is gone after the crash", path="runs[0]")
        root = campaign(cell("after-checkpoint:2", lost, kept="/dev/shm/killpoint-x/00001"))
        failure = root.find("testsuite/testcase/failure")
        assert failure is not None
        assert failure.get("type") == "lost"
        assert failure.text is not None
        assert "run-lost: the run is gone after the crash" in failure.text
        assert (
            "replay: killpoint replay reference/research/tool-batch/sqlite/after-checkpoint:2"
            in failure.text
        )
        assert "kept: /dev/shm/killpoint-x/00001" in failure.text

    def test_an_accepted_cell_and_a_skipped_row_are_skips(self) -> None:
        """Accepted cells do not fail (pytest writes its xfail the same way)."""
        lost = Finding("run-lost", "gone", path="runs[0]").to_json()
        lost["accepted"] = "no ownership outside the queue"
        accepted = cell(
            "after-checkpoint:3", accepted=True, verdict="lost", expected=False, findings=[lost]
        )
        root = campaign(accepted)
        skips = root.findall("testsuite/testcase/skipped")
        assert [(s.get("type"), s.get("message")) for s in skips] == [
            ("accepted", "accepted: no ownership outside the queue"),
            (None, "the mode cannot pause"),
        ]
        row = root.findall("testsuite/testcase")[1]
        assert (row.get("classname"), row.get("name")) == (
            "killpoint.reference/confirm/runs",
            "row",
        )


class TestContent:
    def test_secrets_masked_and_control_characters_visible(self) -> None:
        """A sentence holding a password and an escape sequence: the XML parses, and holds
        neither."""
        remember(SECRET)
        hostile = Finding(
            "status-differs", f"said {SECRET} \x1b[31mred\x00 <b>&", path="runs[0].status"
        )
        text = render(
            to_document(
                CampaignResult(CampaignConfig(), 1, CellLog([cell("mid-model:1", hostile)]))
            )
        )
        assert SECRET not in text
        assert "\x1b" not in text and "\x00" not in text
        failure = ET.fromstring(text).find("testsuite/testcase/failure")
        assert failure is not None and failure.text is not None
        assert "\\x1b[31mred\\x00 <b>&" in failure.text

    def test_every_attribute_is_xml_whatever_the_report_holds(self) -> None:
        """`killpoint report v.json --junit v.xml` on a crafted report: a verdict (the
        failure's `type`), a store, a point and a row-level group's verdict holding an
        escape sequence, a bell and XML's noncharacters. The file parses, carries no control
        character, and shows them escaped."""
        hostile = "duplicated\x1b[2J\x07\ufffe"
        document = to_document(
            CampaignResult(
                CampaignConfig(),
                1,
                CellLog([cell("mid-model:1", Finding("status-differs", "x", path="runs"))]),
            )
        )
        document["cells"][0].update(verdict=hostile, store=HOSTILE)
        document["without_crash"] = [
            {"key": "k", "kind": "run-lost", "verdict": hostile, "rows": ["r/s/m/sqlite"]}
        ]
        document["skipped"] = [{"runtime": "r", "scenario": "s", "mode": "m", "point": HOSTILE}]
        text = render(document)
        assert controls(text) == [] and "\ufffe" not in text
        suite = ET.fromstring(text).find("testsuite")
        assert suite is not None
        types = [f.get("type") for f in suite.iter("failure")]
        assert types == ["duplicated\\x1b[2J\\x07<U+FFFE>"] * 2
        names = [c.get("name", "") for c in suite.iter("testcase")]
        assert any("hunter2" in n and "\\x1b]0;title\\x07" in n for n in names), names


def test_a_row_whose_baseline_failed_is_its_without_crash_case(
    failed_row: CampaignResult,  # noqa: F811
) -> None:
    """A real campaign whose row's baseline failed: its one cell is the row's
    `STORE/without-crash` case (as the pytest plugin names it), not a crash at a point
    the campaign never crashed at, and its failure says which cells were not planned."""
    (case,) = ET.fromstring(render(document_of(failed_row))).iter("testcase")
    assert case.get("classname") == f"killpoint.{RUNTIME}/research/tool-batch"
    assert case.get("name") == "sqlite/without-crash"
    props = {p.get("name"): p.get("value") for p in case.iter("property")}
    assert props["not_planned"] == "the 3 crash cells its run offered were not planned"
    assert props["cell"].endswith("/sqlite/mid-model:1")  # what replays it
    failure = case.find("failure")
    assert failure is not None and failure.text is not None
    first, *rest = failure.text.splitlines()
    assert first == (
        "happens without a crash: the baseline failed, so the 3 crash cells its run offered "
        "were not planned"
    )
    assert any(PROBLEM in line for line in rest)


def not_run(root: ET.Element) -> list[tuple[str | None, str | None, str | None]]:
    """The cases that say what did not run: (classname, name, message)."""
    return [
        (case.get("classname"), case.get("name"), skipped.get("message"))
        for case in root.iter("testcase")
        for skipped in case.iter("skipped")
        if skipped.get("type") == "not-run"
    ]


def test_a_stopped_campaign_has_a_skipped_case_for_what_it_did_not_run(tmp_path: Path) -> None:
    """A real campaign stopped by --fail-fast (one worker: the cells after the first
    unexpected one never start): its row has one skipped `STORE/not-run` case saying how
    many of its planned cells did not run and why, counted in the suite's `skipped`, rather
    than a suite of what ran alone that a CI shows as complete."""
    result = run(
        tmp_path / "work", runtime="tests.harness.broken_runtimes:early_checkpoint",
        fail_fast=True, workers=1,
    )  # fmt: skip
    document = document_of(result)
    ran, planned = document["summary"]["cells"], document["summary"]["planned"]
    assert 0 < ran < planned, document.get("stopped")
    root = ET.fromstring(render(document))
    row = "killpoint.tests.harness.broken_runtimes:early_checkpoint/research/tool-batch"
    assert [
        (
            row,
            "sqlite/not-run",
            f"{planned - ran} of {planned} planned cells did not run because the campaign "
            "stopped at its first unexpected cell (--fail-fast)",
        )
    ] == not_run(root)
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("skipped")) == (str(ran + 1), "1")


def test_an_interrupted_campaign_has_one_not_run_case_per_row_not_one_per_cell() -> None:
    """Ctrl-C after three cells: a case for each row with cells not run, whether its cells
    were planned or not; one for the whole campaign when its document keeps no plan (a
    merge of shards); none when every planned cell ran."""
    document = to_document(interrupted_result())
    root = ET.fromstring(render(document))
    why = "because the campaign was interrupted"
    assert [
        ("killpoint.agno/research/tool-batch", "sqlite/not-run",
         f"2 of 4 planned cells did not run {why}"),
        ("killpoint.agno/research/runs", "sqlite/not-run", f"1 of 1 planned cell did not run {why}"),
        ("killpoint.agno/cancel/runs", "sqlite/not-run",
         f"the row's cells were never planned {why} before its baseline finished"),
    ] == not_run(root)  # fmt: skip
    suite = root.find("testsuite")
    assert suite is not None
    assert (suite.get("tests"), suite.get("skipped")) == ("5", "3")
    merged = {k: v for k, v in document.items() if k != "planned_cells"}
    assert [("killpoint", "not-run", f"3 of 5 planned cells did not run {why}")] == not_run(
        ET.fromstring(render(merged))
    )
    whole = interrupted_result()
    whole.interrupted, whole.planned = False, 2
    whole.plan = {
        ("agno", "research", "tool-batch", "sqlite"): ["after-checkpoint:1", "after-checkpoint:2"]
    }
    assert not_run(ET.fromstring(render(to_document(whole)))) == []
