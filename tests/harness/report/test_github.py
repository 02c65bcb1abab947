"""GitHub Actions, rendered from the report's document: workflow commands escaped by
GitHub's rules, the step summary's Markdown escaped and masked, at most ten annotations."""

from __future__ import annotations

import re
from typing import Any

from killpoint.engine.campaign import CampaignResult
from killpoint.engine.cell_log import CellLog
from killpoint.engine.options import CampaignConfig
from killpoint.judge.groups import Group
from killpoint.redaction import remember
from killpoint.report import github
from killpoint.report.document import to_document
from killpoint.values.findings import Finding
from tests.harness.failed_baseline import (
    PROBLEM,
    ROW,
    document_of,
    failed_row,  # noqa: F401  (a fixture)
    stopped_row,  # noqa: F401  (a fixture)
)
from tests.harness.report.test_junit import cell
from tests.harness.stored_early import (
    EARLY,
    stored_early,  # noqa: F401  (a fixture)
)
from tests.harness.stored_early import document_of as stored_early_document

SECRET = "s3cr3t-pass-word"


def group(n: int = 1, example: str = "ended otherwise") -> dict[str, Any]:
    return Group(
        key=f"status-differs:-:runs[*].status{n}",
        kind="status-differs",
        tool=None,
        pattern="runs[*].status",
        severity="high",
        verdict="diverged",
        cells=["reference/research/tool-batch/sqlite/mid-model:1"],
        example=example,
        example_cell="reference/research/tool-batch/sqlite/mid-model:1",
        replay="killpoint replay reference/research/tool-batch/sqlite/mid-model:1",
    ).to_json()


def autolinks(text: str) -> list[str]:
    """What GitHub would link or mention in Markdown text outside code spans: a URL
    scheme's `://`, a `www.`, an `@` before a name or a host (escapes resolved first, as
    GitHub resolves them before it links)."""
    plain = re.sub(r"(`+).*?\1", "", text).replace("\\", "")
    return re.findall(r"://|www\.|@\w", plain, flags=re.IGNORECASE)


class TestWorkflowCommands:
    def test_data_and_properties_escaped_as_github_reads_them(self) -> None:
        """%, CR and LF in the message; also : and , in a property."""
        assert github.escape_data("100%\r\ndone") == "100%25%0D%0Adone"
        assert github.escape_property("a: b, c%") == "a%3A b%2C c%25"

    def test_an_annotation_cannot_start_a_second_command(self) -> None:
        """Run content holding a newline and `::warning::` stays inside the one line."""
        remember(SECRET)
        line = github.annotation("killpoint: run-lost", f"gone\n::warning::{SECRET}\x1b[2J")
        assert len(line.splitlines()) == 1
        assert line.startswith("::error title=killpoint%3A run-lost::gone%0A::warning::")
        assert SECRET not in line and "\x1b" not in line

    def test_ten_annotations_then_a_count(self) -> None:
        """GitHub shows ten per step: the rest are counted in an eleventh."""
        lines = github.error_commands([group(n) for n in range(14)])
        assert len(lines) == 11
        assert lines[-1].endswith("::4 more groups: see the step summary")


class TestStepSummary:
    def test_markdown_and_html_in_run_content_shown_as_text(self) -> None:
        """A sentence with HTML, a table pipe and Markdown emphasis: escaped; a replay
        command shown in a code span; the secret is masked."""
        remember(SECRET)
        hostile = group(example=f"<img src=x onerror=alert(1)> | **{SECRET}** `x`")
        result = CampaignResult(CampaignConfig(), 9, CellLog([cell("mid-model:1")]))
        document = {**to_document(result), "groups": [hostile]}
        text = github.step_summary(document, ["/r/m.json"])
        assert "<img" not in text and SECRET not in text
        assert "&lt;img src=x onerror=alert\\(1\\)&gt; \\| \\*\\*" in text
        assert "`killpoint replay reference/research/tool-batch/sqlite/mid-model:1`" in text
        assert "| research | tool\\-batch | 1 | 1 | 0 | 0 | 0 |" in text.splitlines()
        assert "Reports: `/r/m.json`" in text

    def test_run_content_cannot_link_or_mention(self) -> None:
        """GitHub links `https://`, `www.` and `a@b.example` in text even with its dots
        escaped, and mentions `@name`: each broken by a WORD JOINER, the text kept."""
        link = "Log in at https://evil.example/login or WWW.evil.example, a@b.example @all"
        result = CampaignResult(CampaignConfig(), 9, CellLog([cell("mid-model:1")]))
        document = {**to_document(result), "groups": [group(example=link)], "runtime": link}
        text = github.summary_markdown(document)
        assert not autolinks(text), text
        joined = github.WORD_JOINER
        assert f"https:{joined}//evil\\.example/login or WWW{joined}\\.evil" in text
        assert f"a@{joined}b\\.example @{joined}all" in text

    def test_code_is_a_span_no_markdown_inside_can_escape(self) -> None:
        """Text in a `<code>` tag is still Markdown (`*md*` would be emphasis, `[l](...)` a
        link): a replay command is a backtick code span instead, fenced longer than any
        backtick run in it."""
        result = CampaignResult(CampaignConfig(), 9, CellLog([cell("mid-model:1")]))
        hostile = group()
        hostile["replay"] = "*md* [l](http://e) <b>x</b> ``y`"
        text = github.step_summary({**to_document(result), "groups": [hostile]}, ["a`b"])
        assert "replay: ``` *md* [l](http://e) <b>x</b> ``y` ```" in text
        assert "Reports: ``a`b``" in text
        assert "<code>" not in text

    def test_only_under_github_actions(self) -> None:
        """GITHUB_ACTIONS=true, as the runner sets it; another CI gets neither."""
        assert github.under_actions({"GITHUB_ACTIONS": "true"})
        assert not github.under_actions({"CI": "true"})


def test_the_summary_says_which_rows_crash_cells_were_not_planned_and_why(
    failed_row: CampaignResult,  # noqa: F811
) -> None:
    """A real campaign whose row's baseline failed: the rows' table has a column for the
    cells not run, as the terminal's has, and a line per such row says why."""
    text = github.summary_markdown(document_of(failed_row))
    lines = text.splitlines()
    assert (
        "| scenario | mode | cells | ok | lost (expected) | unexpected | dups | not run |" in lines
    )
    assert "| research | tool\\-batch | 1 | 0 | 0 | 1 | 0 | 3 not planned |" in lines
    assert (
        github.markdown(
            "not planned: 1 row whose baseline failed; its one cell carries the failure, "
            "without a crash"
        )
        in lines
    )
    said = github.markdown(
        "research/tool-batch: its baseline failed, so the 3 crash cells its run offered "
        f"were not planned: {PROBLEM}"
    )
    assert any(line.startswith(f"- {said}") for line in lines), text


def test_a_groups_verdict_is_the_one_its_cells_have_as_every_face_says(
    stored_early: CampaignResult,  # noqa: F811
) -> None:
    """A real campaign of running_as_completed: the run stored COMPLETED before its end
    makes every cell corrupt, and its messages differ there too. The summary named that
    group by its kind's verdict (`diverged`) where the terminal said its 7 cells are
    corrupt; the summary and the annotations now say what the terminal says."""
    from killpoint.report.terminal import render

    document = stored_early_document(stored_early)
    key = "messages-differ:-:runs[*].messages[*]"
    (group,) = [g for g in document["groups"] if g["key"] == key]
    assert (group["verdict"], group["verdicts"]) == ("diverged", {"corrupt": EARLY})
    said = f"messages-differ at runs[*].messages[*]: {EARLY} cells ({EARLY} corrupt)"
    assert said in render(document)
    (line,) = [
        line
        for line in github.summary_markdown(document).splitlines()
        if line.split("**")[1:2] == [github.markdown(github.heading(group))]
    ]
    assert f"**: {EARLY} cells, {EARLY} corrupt (high); e.g." in line, line
    titles = [a.split("::")[1] for a in github.annotation_lines(document).splitlines() if "::" in a]
    assert "error title=killpoint%3A messages-differ (corrupt)" in titles, titles


def test_a_stopped_campaign_says_so_in_the_summary_as_the_terminal_does(
    stopped_row: CampaignResult,  # noqa: F811
) -> None:
    """`--fail-fast` on a row whose baseline failed: the terminal said "stopped: …" and the
    row's line, the Markdown nothing of it. Now the Markdown has the terminal's own lines
    (report.terminal), the stop as a paragraph and its rows as its list, and the row is
    not planned, never a row every kind of whose points ran."""
    from killpoint.report import terminal

    document = document_of(stopped_row)
    lines = github.summary_markdown(document).splitlines()
    stop, row = [text for text, _ in terminal.stopped_lines(document)]
    assert stop == (
        "stopped: it stopped at its first unexpected cell (--fail-fast): 1 of 1 cell ran; 1 row "
        "not planned: its baseline failed"
    )
    at = lines.index(github.markdown(stop))
    assert lines[at + 1 : at + 3] == ["", f"- {github.markdown(row.strip())}"]
    for text, _ in terminal.preamble_lines(document):  # what did not run, as the terminal
        shown = github.markdown(text.strip())
        assert shown in lines or f"- {shown}" in lines, (text, lines)
    assert "every kind of point planned ran in 1" not in "\n".join(lines)


def test_the_summary_has_every_planned_row_and_the_cells_that_did_not_run() -> None:
    """An interrupted campaign: a row none of whose cells ran was left out of the table, a
    row whose cells were never planned too, and nothing said what did not run."""
    from killpoint.report import terminal
    from tests.harness.report.test_terminal import interrupted_result

    document = to_document(interrupted_result())
    lines = github.summary_markdown(document).splitlines()
    assert (
        "| scenario | mode | cells | ok | lost (expected) | unexpected | dups | not run |" in lines
    )
    assert "| research | tool\\-batch | 2 | 1 | 0 | 1 | 0 | 2 |" in lines
    assert "| research | runs | 0 | 0 | 0 | 0 | 0 | 1 |" in lines
    assert "| cancel | runs | 0 | 0 | 0 | 0 | 0 | whole row |" in lines
    (said, _), *_ = terminal.preamble_lines(document)
    assert said.startswith("not run: 3 planned cells and 1 row whose cells were never planned")
    assert github.markdown(said) in lines


def test_the_example_of_a_row_whose_baseline_failed_is_no_crash(
    failed_row: CampaignResult,  # noqa: F811
) -> None:
    """The failing group's "e.g." (summary and annotation) named `…/mid-model:1`, a crash
    point the campaign never planned: it names the row, without a crash; the replay command
    keeps the cell's id, which `killpoint replay` reads."""
    document = document_of(failed_row)
    (cell,) = document["cells"]
    shown = github.markdown(f"{'/'.join(ROW)} (no crash: its baseline failed)")
    (line,) = [line for line in github.summary_markdown(document).splitlines() if "e.g." in line]
    assert f"e.g. {shown}: " in line, line
    assert f"replay: `{cell['replay']}`" in line
    assert "mid-model" not in line.replace(cell["replay"], ""), line
    (annotation,) = github.annotation_lines(document).splitlines()
    assert f"%0Ae.g. {'/'.join(ROW)} (no crash: its baseline failed): " in annotation
    assert "mid-model" not in annotation.replace(cell["replay"], ""), annotation


def test_a_stopped_campaigns_headline_is_marked_as_an_interrupted_ones_is(
    stopped_row: CampaignResult,  # noqa: F811
) -> None:
    """`--fail-fast` (or `--budget`): the figures are partial, as an interrupted campaign's
    are, and the headline says so; the `stopped:` line below says why."""
    headline = github.summary_markdown(document_of(stopped_row)).splitlines()[2]
    assert headline.endswith(" (stopped early)"), headline
    assert "(interrupted)" not in headline
    whole = CampaignResult(CampaignConfig(), 9, CellLog([cell("mid-model:1")]))
    assert github.summary_markdown(to_document(whole)).splitlines()[2].endswith(", seed 9")


def test_the_summary_table_has_every_column_the_terminals_has() -> None:
    """The Markdown table left out `lost (expected)` and `dups` (and `low only`): a row with
    an expected loss, duplicates and a cell unexpected at low severity only has the same
    columns and figures in the summary as in the terminal's table."""
    from killpoint.report import terminal

    low = Finding("usage-differs", "usage: baseline 10 tokens, resumed 12", path="usage")
    cells = [
        cell("after-checkpoint:1", duplicates=2),
        cell("after-checkpoint:2", verdict="lost"),
        cell("mid-model:1", low),
    ]
    document = to_document(CampaignResult(CampaignConfig(), 9, CellLog(cells)))
    lines = github.summary_markdown(document).splitlines()
    names = ["scenario", "mode", "cells", "ok", "lost (expected)", "unexpected", "low only"]
    assert f"| {' | '.join([*names, 'dups'])} |" in lines
    assert "| research | tool\\-batch | 3 | 1 | 1 | 0 | 1 | 2 |" in lines
    assert "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |" in lines
    header = next(line for line in terminal.render(document).splitlines() if "scenario" in line)
    assert [*names, "dups"] == [n.strip() for n in re.split(r"┃", header) if n.strip()]
