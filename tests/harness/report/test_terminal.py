"""The terminal's summary, rendered from the report's document (what `killpoint matrix`
prints, and `merge`/`report --text` write): group headings a reader can tell apart, the
cells a campaign planned and never ran, in the table and in words, the causes, and one
time format with its nouns counted."""

# ruff: noqa: SIM300
from __future__ import annotations

import io
import re
from collections.abc import Callable

import pytest
from rich.console import Console

from killpoint.cli import output as cli_output
from killpoint.engine.campaign import CampaignResult
from killpoint.engine.cell_log import CellLog
from killpoint.engine.options import CampaignConfig
from killpoint.judge.groups import Group, group_findings
from killpoint.report import terminal
from killpoint.report.document import to_document
from killpoint.values.cell import CellResult
from killpoint.values.findings import Finding
from tests.harness.failed_baseline import (
    OFFERED,
    PROBLEM,
    ROW,
    document_of,
    failed_row,  # noqa: F401  (a fixture)
    stopped_row,  # noqa: F401  (a fixture)
)
from tests.harness.runner_commands import HOSTILE, MARKERS, commands, controls


def result_cell(scenario: str, mode: str, point: str, findings: list[Finding]) -> CellResult:
    cell_id = f"agno/{scenario}/{mode}/sqlite/{point}"
    verdict = min((f.verdict for f in findings), default="ok")
    return CellResult(
        id=cell_id, runtime="agno", scenario=scenario, mode=mode, store="sqlite",
        schedule=[point], verdict=verdict, expected=not findings,
        findings=[f.to_json() for f in findings], replay=f"killpoint replay {cell_id}",
    )  # fmt: skip


# Pairs of groups of one kind that only their path (or tool) tells apart, as agno's
# matrix has them: the status the store does not hold and the run it does not hold; two
# fields of a run that differ; one tool's repeat and another's.
LOOKALIKES = [
    Finding("acknowledged-lost", "run 1 returned COMPLETED but the store says RUNNING",
            path="runs[0].status"),
    Finding("acknowledged-lost", "run 1 returned COMPLETED but is not in the store",
            path="runs[0]"),
    Finding("run-differs", "runs[0].content: baseline 'a', resumed 'b'", path="runs[0].content"),
    Finding("run-differs", "runs[0].events: baseline None, resumed [...]", path="runs[1].events"),
    Finding("effect-duplicated", "send_email ran twice", path="ledger", tool="send_email"),
    Finding("effect-duplicated", "send_sms ran twice", path="ledger", tool="send_sms"),
]  # fmt: skip


def lookalike_cells() -> list[CellResult]:
    """One cell per lookalike finding, and one cell with every one of them."""
    cells = [
        result_cell("research", "tool-batch", f"after-checkpoint:{n}", [f])
        for n, f in enumerate(LOOKALIKES, start=1)
    ]
    return [*cells, result_cell("confirm", "runs", "lock-held:2", LOOKALIKES)]


def printed(show: Callable[[Console], None]) -> list[str]:
    text = io.StringIO()
    show(cli_output.console(text))
    return text.getvalue().splitlines()


def group_lines(groups: list[Group]) -> list[str]:
    document = {"groups": [g.to_json() for g in groups]}
    return [text for text, _ in terminal.group_lines(document)]


def test_two_groups_of_one_kind_never_read_the_same_in_the_terminal() -> None:
    """Each numbered heading names its group's path (or tool): no two read alike."""
    groups = group_findings(lookalike_cells())
    assert 6 == len(groups)
    lines = group_lines(groups)
    headings = [re.sub(r"^\d+\. ", "", line) for line in lines if re.match(r"^\d+\. ", line)]
    assert 6 == len(headings) == len(set(headings)), headings
    for g in groups:  # its path, and its tool where one keys it
        (shown,) = [h for h in headings if h.startswith(f"{g.heading}:")]
        assert g.pattern in shown and (g.tool or "") in shown
    for heading in (
        "acknowledged-lost at runs[*].status: 2 cells (",
        "acknowledged-lost at runs[*]: 2 cells (",
        "effect-duplicated (tool send_sms) at ledger: 2 cells (",
    ):
        assert any(h.startswith(heading) for h in headings), (heading, headings)


def test_two_row_level_groups_of_one_kind_never_read_the_same() -> None:
    """Found without a crash: the heading names the path too (it named the kind alone)."""
    rows = ["agno/cancel/runs/sqlite", "agno/reserve/runs/sqlite"]
    groups = [
        Group(key=f"outcome-unexpected:-:{path}@no-crash", kind="outcome-unexpected",
              tool=None, pattern=f"{path}@no-crash", severity="high", verdict="diverged",
              cells=rows, example="...", example_cell=rows[0], replay="killpoint matrix",
              without_crash=True)
        for path in ("runs[*].content", "runs[*].status")
    ]  # fmt: skip
    lines = [
        t for t, _ in terminal.without_crash_lines({"without_crash": [g.to_json() for g in groups]})
    ]
    headings = [line for line in lines if re.match(r"^\d+\. ", line)]
    assert [
        "1. outcome-unexpected at runs[*].content@no-crash: 2 rows, diverged",
        "2. outcome-unexpected at runs[*].status@no-crash: 2 rows, diverged",
    ] == headings


def interrupted_result() -> CampaignResult:
    """Ctrl-C after three cells: research/tool-batch ran 2 of its 4, research/runs none
    of its 1, and cancel/runs stopped before its cells were planned."""
    config = CampaignConfig.from_options(runtime="agno")
    cells = [
        result_cell("research", "tool-batch", "after-checkpoint:1", []),
        result_cell("research", "tool-batch", "after-checkpoint:2", [LOOKALIKES[2]]),
    ]
    result = CampaignResult(config, 7, CellLog(cells), planned=5, interrupted=True)
    result.plan = {
        ("agno", "research", "tool-batch", "sqlite"): [
            "after-checkpoint:1", "after-checkpoint:2", "after-checkpoint:3", "sigstop:1",
        ],
        ("agno", "research", "runs", "sqlite"): ["after-checkpoint:1"],
        ("agno", "cancel", "runs", "sqlite"): None,
    }  # fmt: skip
    return result


def test_cells_planned_and_not_run_have_a_column_and_a_line() -> None:
    """The rows never started are in the table, not left out, and the line says what did
    not run and why."""
    result = interrupted_result()
    lines = printed(lambda out: cli_output.summary(to_document(result), out))
    header = next(line for line in lines if "scenario" in line)
    assert header.rstrip(" ┃|").endswith("not run")
    rows = {
        tuple(cell.strip() for cell in re.split(r"[│|]", line)[1:3]): line
        for line in lines
        if "│" in line or "|" in line
    }
    assert re.search(r"\b2\s*│\s*$", rows["research", "tool-batch"].rstrip("│ ") + " │")
    assert rows["research", "runs"].rstrip(" │").endswith("1")
    assert rows["cancel", "runs"].rstrip(" │").endswith("whole row")
    assert (
        "not run: 3 planned cells and 1 row whose cells were never planned (the campaign was "
        "interrupted); never started: research/runs, cancel/runs"
    ) in lines


def test_a_campaign_that_ran_every_planned_cell_has_no_not_run_column() -> None:
    result = interrupted_result()
    result.interrupted = False
    result.plan = {
        ("agno", "research", "tool-batch", "sqlite"): [
            *["after-checkpoint:1"],
            "after-checkpoint:2",
        ]
    }
    lines = printed(lambda out: cli_output.summary(to_document(result), out))
    assert not any("not run" in line for line in lines), lines


def test_a_row_whose_baseline_failed_says_its_crash_cells_were_not_planned_and_why(
    failed_row: CampaignResult,  # noqa: F811
) -> None:
    """A real campaign whose one row's baseline failed: its one cell carries the failure,
    and the table and a line say how many crash cells that cell stands for, and why (the
    baseline's failure), in what `matrix` prints and in `--text` alike."""
    document = document_of(failed_row)
    lines = printed(lambda out: cli_output.summary(document, out))
    header = next(line for line in lines if "scenario" in line)
    assert header.rstrip(" ┃|").endswith("not run")
    row = next(line for line in lines if line.startswith("│ research"))
    assert row.rstrip(" │").endswith(f"{OFFERED} not planned")
    said = (
        "  research/tool-batch: its baseline failed, so the 3 crash cells its run offered "
        f"were not planned: {PROBLEM}"
    )
    heading = (
        "not planned: 1 row whose baseline failed; its one cell carries the failure, "
        "without a crash"
    )
    assert heading in lines
    assert any(line.startswith(said) for line in lines), lines
    text = terminal.render(document).splitlines()
    assert heading in text and any(line.startswith(said) for line in text)


def test_the_figures_line_has_one_time_format_counted_nouns_and_the_bound() -> None:
    """Issue 56: "743.826 s", "1 cells" and a duplicate count that did not say how many
    were beyond the bound."""
    document = {
        "summary": {"cells": 1, "unexpected": 1, "expected_losses": 1, "duplicates": 1,
                    "duplicates_beyond_bound": 1, "seconds": 743.826, "cells_per_second": 0.5},
        "causes": [{"failing_cells": 1, "accepted": None}],
    }  # fmt: skip
    assert terminal.figures_line(document) == (
        "1 cell, 1 unexpected from 1 cause, 1 expected loss, 1 duplicate (1 beyond the bound), "
        "12 min 24 s (0.5 cells/s)"
    )


@pytest.mark.parametrize(
    ("ended", "mark"),
    [({"interrupted": True}, " (interrupted)"), ({"stopped": {"reason": "budget"}}, " (stopped early)"),
     ({}, "cells/s)")],
)  # fmt: skip
def test_the_figures_line_says_a_campaign_ran_part_of_its_plan(
    ended: dict[str, object], mark: str
) -> None:
    """The terminal's and --text's headline, as the Markdown's: figures of a campaign that
    did not run its whole plan are partial, said at once, not only in a line below."""
    document = {"summary": {"cells": 2, "seconds": 1.0, "cells_per_second": 2.0}, **ended}
    assert terminal.figures_line(document).endswith(mark)


def test_no_line_of_the_text_file_commands_a_runner_whatever_the_report_holds() -> None:
    """`killpoint report R.json --text T.txt` on a crafted report: a cause's name, its
    groups' keys and a planned row's scenario and mode holding newlines, workflow commands
    and escape sequences. No line of the file is a command or carries a control character,
    and the hostile text is there (escaped), so the fields were tried."""
    document = to_document(interrupted_result())
    document["causes"][0]["name"] = HOSTILE
    document["causes"][0]["groups"][0]["key"] = HOSTILE
    document["planned_cells"][2] = {**document["planned_cells"][2], "scenario": HOSTILE}
    document["planned_cells"][1] = {**document["planned_cells"][1], "mode": HOSTILE}
    text = terminal.render(document)
    assert [] == commands(text), text
    assert [] == controls(text), text
    assert all(marker in text for marker in MARKERS), text


def test_the_causes_heading_says_how_many_fail_when_not_all_do() -> None:
    """The figures line counts the causes that fail the campaign ("from 4 causes"); the list
    under it holds a low-severity one too, and its heading says so instead of a fifth."""
    from killpoint.report.text import causes_heading

    failing = {"failing_cells": 3}
    low = {"failing_cells": 0, "severity": "low"}
    assert "5 causes (4 failing the campaign)" == causes_heading([failing] * 4 + [low])
    assert "2 causes" == causes_heading([failing, failing])


def test_the_cell_of_a_row_whose_baseline_failed_is_no_crash_in_its_examples(
    failed_row: CampaignResult,  # noqa: F811
) -> None:
    """The cause's and the group's "e.g." named `…/mid-model:1`, a crash point the campaign
    never planned (`--points after-checkpoint`): they name the row, without a crash. The
    replay line keeps the cell's id, which is what `killpoint replay` reads."""
    document = document_of(failed_row)
    (cell,) = document["cells"]
    text = terminal.render(document).splitlines()
    examples = [line for line in text if line.lstrip().startswith("e.g. ")]
    assert 2 == len(examples), text  # the cause's and the group's
    for line in examples:
        assert line.lstrip().startswith(f"e.g. {'/'.join(ROW)} (no crash: its baseline failed): ")
    assert not [line for line in text if "mid-model" in line and "replay: " not in line], text
    assert any(line.strip().endswith(f"killpoint replay {cell['id']}") for line in text)


def test_a_stopped_campaign_says_so_in_the_text_as_in_the_terminal(
    stopped_row: CampaignResult,  # noqa: F811
) -> None:
    """`--fail-fast` on a row whose baseline failed: the stop and the row it did not cover
    are lines of the summary (`matrix` printed them apart, so `--text` had none), and the
    row is not planned, never "every kind of point planned ran in 1 of 1 row"."""
    document = document_of(stopped_row)
    expected = [
        "stopped: it stopped at its first unexpected cell (--fail-fast): 1 of 1 cell ran; 1 row "
        "not planned: its baseline failed",
        "  research/tool-batch: its baseline failed; no crash cell planned",
    ]
    assert expected == [t for t, _ in terminal.stopped_lines(document)]
    text = terminal.render(document).splitlines()
    at = text.index(expected[0])
    assert expected == text[at : at + 2]
    lines = printed(lambda out: cli_output.summary(document, out))
    assert 1 == lines.count(expected[0])  # what `matrix` prints: the same line, once
    assert not any("every kind of point planned ran in 1" in line for line in text)
    assert [] == terminal.stopped_lines(document_of(stopped_row) | {"stopped": None})
