"""A campaign for GitHub, from its report document: the Markdown summary (a job's step
summary, `$GITHUB_STEP_SUMMARY`, or a pull request's comment) and one `::error`
annotation per failing group, so a failed run reads on the job's page without opening
the log. `killpoint matrix`, `merge` and `report` write them the same way (the cli's
ending appends and prints them under GitHub Actions).

Run content reaches both (a scenario's name, a finding's sentence), so every piece is
masked (killpoint.redaction), made visible, and escaped for where it goes: in Markdown
(the summary here, `killpoint diff`'s comment in report.diff_text) by `markdown` (prose)
and `code` (a code span), the one pair of Markdown escapes killpoint has; in a workflow
command, `%`, `\\r` and `\\n` in the message, and `:` and `,` too in a property (GitHub's
rules, as @actions/core applies them).
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from killpoint.redaction import redact
from killpoint.report.planned import Row
from killpoint.report.text import (
    causes_heading,
    cell_verdicts,
    cut,
    failing,
    heading,
    verdicts_said,
)
from killpoint.values.durations import duration
from killpoint.values.sentences import count
from killpoint.values.shown import LEGACY_COMMAND, visible

ANNOTATIONS = 10  # GitHub shows ten error annotations per step; the rest are counted
_MARKDOWN = re.compile(r"([\\`*_{}\[\]()#+\-.!|~])")
# GitHub makes a link of `scheme://...`, of `www.` and of `name@host` (GFM's autolinks),
# and a mention of `@name`, in plain text, backslash escapes or not: both read the text
# once its escapes are resolved (`https://evil\.example` is still a link). A WORD JOINER
# (U+2060: no width, no break) after the `:` of `://`, between `www` and its `.` and after
# every `@` breaks each pattern and reads the same.
WORD_JOINER = "\u2060"
_AUTOLINK = re.compile(r"(?<=:)(?=//)|(?<=www)(?=\.)|(?<=@)", re.IGNORECASE)


def under_actions(environ: Mapping[str, str]) -> bool:
    return environ.get("GITHUB_ACTIONS") == "true"


def _clean(text: object) -> str:
    return visible(redact(str(text)))


def markdown(text: object) -> str:
    """Run content shown as itself in GitHub's Markdown, one line that cannot format, link
    or mention: HTML special characters as entities, Markdown punctuation escaped (a `|`
    too, so it cannot end a table's cell), autolinks and mentions broken (WORD_JOINER)."""
    plain = _AUTOLINK.sub(WORD_JOINER, " ".join(_clean(text).split()))
    plain = plain.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    return _MARKDOWN.sub(r"\\\1", plain)


def code(text: object, *, cell: bool = False) -> str:
    """Run content shown as code (a command, a path, a cell's id): a backtick code span,
    whose text GitHub shows as it is (no emphasis, link, autolink, mention or HTML, unlike
    text in a `<code>` tag, which is still Markdown), fenced by more backticks than any run
    of them inside, so none can end it. `cell`: it stands in a table's cell, where a `|`
    ends the cell even inside a span and is escaped (GitHub's tables read `\\|`; outside a
    table the backslash would show)."""
    plain = " ".join(_clean(text).split())
    if cell:
        plain = plain.replace("|", "\\|")
    if not plain:
        return "` `"  # two backticks alone are no span: they would show as text
    fence = "`" * (max((len(run) for run in re.findall(r"`+", plain)), default=0) + 1)
    # A span's first or last backtick of its text would join the fence: a space each side,
    # which GitHub strips.
    pad = " " if plain.startswith("`") or plain.endswith("`") else ""
    return f"{fence}{pad}{plain}{pad}{fence}"


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def annotation(title: str, message: str) -> str:
    """`::error title=...::message`: masked, control characters made visible (newlines
    kept: GitHub shows them once unescaped), then escaped for the workflow command; the
    runner's legacy `##[` broken too, as in every other line (killpoint.values.shown)."""
    title, message = (escape_property(_clean(title)), escape_data(_clean(message)))
    return f"::error title={_unlegacy(title)}::{_unlegacy(message)}"


def _unlegacy(text: str) -> str:
    return text.replace(LEGACY_COMMAND, "##\\[")


def _meaning(group: Mapping[str, Any]) -> str:
    from killpoint.values.findings import KINDS

    kind = str(group.get("kind", ""))
    return KINDS[kind].meaning if kind in KINDS else str(group.get("meaning", ""))


def _verdicts(group: Mapping[str, Any]) -> str:
    """What a group's cells are (its badge, as the terminal and the page say it), not only
    the verdict its kind names: a `messages-differ` group of corrupt cells is corrupt."""
    return verdicts_said(group.get("verdicts"), group.get("verdict"))


def _members(group: Mapping[str, Any]) -> list[Any]:
    return list(group.get("rows") or group.get("cells") or [])


def error_commands(
    groups: Sequence[Mapping[str, Any]], no_crash: Collection[Row] = ()
) -> list[str]:
    """One `::error` line per failing group (`failing`), ten at most, then a count.
    `no_crash`: the rows whose cells made no crash (planned.no_crash_rows), whose example
    cell is named as its row (planned.shown_cell)."""
    from killpoint.report.planned import shown_cell

    lines = []
    for g in groups[:ANNOTATIONS]:
        members = _members(g)
        where = (
            "happens without a crash"
            if g.get("without_crash")
            else count(int(g.get("count") or len(members)), "cell")
        )
        example = (
            g.get("example_row")
            if g.get("without_crash")
            else shown_cell(g.get("example_cell"), no_crash)
        )
        # The group's badge: the verdict most of its cells have, as every other face says.
        badge = next(iter(cell_verdicts(g.get("verdicts"), g.get("verdict"))))
        lines.append(
            annotation(
                f"killpoint: {g.get('kind')} ({badge})",
                f"{heading(g)}: {where}\n{cut(_meaning(g))}\ne.g. {example}: "
                f"{cut(str(g.get('example', '')))}\nreplay: {g.get('replay', '')}",
            )
        )
    if len(groups) > ANNOTATIONS:
        rest = len(groups) - ANNOTATIONS
        lines.append(annotation("killpoint", f"{count(rest, 'more group')}: see the step summary"))
    return lines


def annotation_lines(document: Mapping[str, Any], threshold: str | None = None) -> str:
    """The annotations of a campaign, one per line (a renderer of the document)."""
    from killpoint.report.planned import no_crash_rows

    lines = error_commands(failing(document, threshold), no_crash_rows(document))
    return "".join(line + "\n" for line in lines)


def _paragraphs(lines: Sequence[str]) -> list[str]:
    """The terminal's lines in Markdown: a line as a paragraph, and the lines indented
    under it as its list."""
    out: list[str] = []
    for text in lines:
        if text.startswith(" ") and out:
            out += [*([] if out[-1].startswith("- ") else [""]), f"- {markdown(text.strip())}"]
        else:
            out += ["", markdown(text)]
    return out


def summary_markdown(document: Mapping[str, Any], threshold: str | None = None) -> str:
    """The campaign in Markdown: the figures, the rows, what did not run (cells planned and
    not run, rows whose crash cells were not planned, their baseline having failed, rows
    skipped, and why a campaign that stopped early stopped), the causes, the failing
    groups. What did not run is said by the terminal's own lines (report.terminal), so the
    two never disagree."""
    from killpoint.report import terminal
    from killpoint.report.planned import no_crash_rows, shown_cell

    figures = document.get("summary") or {}
    no_crash = no_crash_rows(document)  # an example there made no crash: named as its row
    low = figures.get("low") or 0
    beyond = figures.get("duplicates_beyond_bound")
    dups = count(int(figures.get("duplicates") or 0), "duplicate")
    if beyond is not None:
        dups += f" ({beyond} beyond the bound)"
    out = [
        f"## killpoint crash matrix: {markdown(document.get('runtime', ''))}",
        "",
        f"{count(int(figures.get('cells') or 0), 'cell')}, "
        f"{figures.get('unexpected', 0)} unexpected"
        + (f", {low} of low severity only" if low else "")
        + f", {count(int(figures.get('expected_losses') or 0), 'expected loss')}, {dups}, "
        f"{duration(float(figures.get('seconds') or 0))}, seed {markdown(document.get('seed'))}"
        + terminal.ended_early(document),
        "",
    ]
    # The terminal's own columns (report.terminal.table_rows): a column added there is here.
    names, rows = terminal.table_rows(document)
    out.append("| " + " | ".join(names) + " |")
    out.append(
        "| " + " | ".join("---" if n in terminal.WORD_COLUMNS else "---:" for n in names) + " |"
    )
    for row in rows:
        texts = [row.scenario, row.mode, *row.figures]
        out.append("| " + " | ".join(markdown(t) for t in texts) + " |")
    out += _paragraphs(
        [t for t, _ in [*terminal.preamble_lines(document), *terminal.stopped_lines(document)]]
    )
    causes = [c for c in document.get("causes") or [] if isinstance(c, Mapping)]
    if causes:
        out += ["", f"### {causes_heading(causes)}", ""]
        for n, c in enumerate(causes, start=1):
            state = (
                f"accepted: {markdown(cut(str(c['accepted'])))}"
                if c.get("accepted")
                else f"{c.get('failing_cells', 0)} failing"
            )
            out.append(
                f"{n}. **{markdown(c.get('name', ''))}** ({count(int(c.get('count') or 0), 'cell')}, "
                f"{state}): {markdown(cut(str(c.get('sentence', ''))))}"
            )
    groups = failing(document, threshold)
    if groups:
        out += ["", f"### {count(len(groups), 'group')} failing the run", ""]
    for n, g in enumerate(groups, start=1):
        where = (
            "without a crash"
            if g.get("without_crash")
            else count(int(g.get("count") or len(_members(g))), "cell")
        )
        example = (
            g.get("example_row")
            if g.get("without_crash")
            else shown_cell(g.get("example_cell"), no_crash)
        )
        out.append(
            f"{n}. **{markdown(heading(g))}**: {where}, {markdown(_verdicts(g))} "
            f"({markdown(g.get('severity'))}); e.g. {markdown(example)}: "
            f"{markdown(cut(str(g.get('example', ''))))}; replay: {code(g.get('replay', ''))}"
        )
    return "\n".join(out) + "\n"


def step_summary(
    document: Mapping[str, Any], written: Sequence[str] = (), threshold: str | None = None
) -> str:
    """What is appended to the job's step summary: the Markdown summary and the reports."""
    text = summary_markdown(document, threshold)
    if written:
        text += "\nReports: " + ", ".join(code(w) for w in written) + "\n"
    return text + "\n"


__all__ = [
    "annotation",
    "annotation_lines",
    "code",
    "error_commands",
    "escape_data",
    "escape_property",
    "failing",
    "heading",
    "markdown",
    "step_summary",
    "summary_markdown",
    "under_actions",
]
