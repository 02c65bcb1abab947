"""A report diff as a pull-request comment (report.diff_text.markdown): run content in it,
a group's example, its heading, a cell's id, a report's name, cannot format, link or
mention, through the step summary's own escapes (report.github)."""

from __future__ import annotations

from killpoint.report.diff import compare
from killpoint.report.diff_text import markdown
from tests.harness.report.test_diff import cell, group, report
from tests.harness.report.test_github import autolinks

LINK = "Log in at https://evil.example/login or www.evil.example, or mail a@b.example @all"


def comment(example: str = LINK, key: str = "run-differs:-:runs[*].content") -> str:
    """The comment on a head that brings one new failing group, `example` its example."""
    base = report([cell(1, "ok", expected=True)], [])
    failing = cell(1, "diverged", key)
    head = report([failing], [group(key, "diverged", failing, example=example)])
    return markdown(compare(base, head, base_name=LINK, head_name="h.json"))


def test_a_url_an_address_or_a_mention_in_run_content_is_no_link() -> None:
    """GitHub links `https://...`, `www.` and `a@b.example` in text, escaped dots or not,
    and mentions `@all`: none of them left in the comment outside code spans."""
    text = comment()
    assert "evil" in text  # the example was shown
    assert autolinks(text) == [], text


def test_a_table_cell_code_span_keeps_its_pipe_and_backticks() -> None:
    """A group's heading in its table's cell: a code span that no backtick run closes and
    no `|` ends (GitHub's tables read `\\|` even inside a span)."""
    text = comment(key="run-differs:-:runs[*].``a|b`")
    row = next(line for line in text.splitlines() if "runs[*]" in line)
    assert row.startswith("| ``` run-differs at runs[*].``a\\|b` ``` | diverged |"), row
