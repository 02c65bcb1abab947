"""A report diff (killpoint.report.diff) in words: lines for a terminal, Markdown for a
pull-request comment. Run content (a sentence, a cell id) is redacted and made inert:
in Markdown it sits in code spans or is escaped, by the same two functions as the step
summary's (report.github.code and .markdown), so a scenario's text cannot format, link or
mention anything in the comment."""

from __future__ import annotations

from killpoint.redaction import redact
from killpoint.report.diff import CellChange, GroupChange, ReportDiff
from killpoint.report.github import code
from killpoint.report.github import markdown as escaped
from killpoint.report.text import cut, visible
from killpoint.values.sentences import count

SHOWN = 20  # cells or groups listed per kind of change; the rest are counted


def _prose(text: str) -> str:
    """Run content as escaped Markdown, cut to a table's cell."""
    # Masked and made one line before the cut, so the cut cannot split a secret the mask
    # would no longer find; escaped after it, so the cut cannot split an escape.
    return escaped(cut(visible(redact(text)), 200))


def counts(diff: ReportDiff) -> str:
    unrun = (
        f"; {count(len(diff.base_not_run), 'cell')} and "
        f"{count(len(diff.base_unrun_groups), 'failing group')} only where base did not run "
        "(not compared)"
        if diff.base_not_run or diff.base_unrun_groups
        else ""
    )
    return (
        f"{count(len(diff.new_groups), 'new group')}, {len(diff.fixed_groups)} fixed, "
        f"{len(diff.still_groups)} still failing; cells: {len(diff.new)} new, "
        f"{len(diff.fixed)} fixed, {len(diff.still_failing)} still failing, "
        f"{len(diff.flaky)} flaky, {len(diff.not_run)} not run by head{unrun}"
    )


def _verdicts(change: CellChange) -> str:
    return f"{change.base or 'not run'} -> {change.head or 'not run'}"


def _group_line(change: GroupChange) -> str:
    return f"{change.heading} [{change.verdict}] {change.base} -> {change.head}"


SECTIONS = (
    ("new_groups", "New failing groups"),
    ("fixed_groups", "Fixed groups"),
    ("still_groups", "Still failing groups"),
    ("unexercised_groups", "Groups not exercised (head did not run their cells)"),
    ("base_unrun_groups", "Failing groups only where base did not run (not compared)"),
)
CELL_SECTIONS = (
    ("new", "New failing cells"),
    ("fixed", "Fixed cells"),
    ("still_failing", "Still failing cells"),
    ("flaky", "Flaky cells (verdict changed, same findings)"),
    ("base_not_run", "Cells base did not run (not compared)"),
)


def lines(diff: ReportDiff) -> list[str]:
    """What `killpoint diff` prints."""
    found = [f"{diff.head} against {diff.base}: {counts(diff)}"]
    for name, title in SECTIONS:
        groups: list[GroupChange] = getattr(diff, name)
        found += _section(title, [visible(redact(_group_line(g))) for g in groups])
    for name, title in CELL_SECTIONS:
        cells: list[CellChange] = getattr(diff, name)
        found += _section(title, [f"{visible(redact(c.id))}  {_verdicts(c)}" for c in cells])
    return found


def _section(title: str, entries: list[str]) -> list[str]:
    """A titled list cut to SHOWN entries; nothing when it is empty."""
    if not entries:
        return []
    more = [f"  ... and {len(entries) - SHOWN} more"] if len(entries) > SHOWN else []
    return [f"{title}:", *(f"  {e}" for e in entries[:SHOWN]), *more]


def markdown(diff: ReportDiff) -> str:
    """The diff as a pull-request comment."""
    status = (
        "**killpoint: new failing groups**"
        if diff.regressed
        else "**killpoint: no new failing group**"
    )
    out = [f"{status} — {_prose(counts(diff))}", ""]
    out.append(f"Head {code(diff.head)} against base {code(diff.base)}.")
    for name, title in SECTIONS:
        groups: list[GroupChange] = getattr(diff, name)
        if not groups:
            continue
        out += ["", f"### {title}", "", "| group | verdict | base | head | example |"]
        out.append("| --- | --- | ---: | ---: | --- |")
        for g in groups[:SHOWN]:
            out.append(
                f"| {code(g.heading, cell=True)} | {_prose(g.verdict)} | {g.base} | {g.head} | "
                f"{_prose(g.example)} |"
            )
        if len(groups) > SHOWN:
            out.append(f"\n… and {len(groups) - SHOWN} more")
    for name, title in CELL_SECTIONS:
        cells: list[CellChange] = getattr(diff, name)
        if not cells:
            continue
        out += ["", f"<details><summary>{title}: {len(cells)}</summary>", ""]
        out += [f"- {code(c.id)}: {_prose(_verdicts(c))}" for c in cells[:SHOWN]]
        if len(cells) > SHOWN:
            out.append(f"- … and {len(cells) - SHOWN} more")
        out += ["", "</details>"]
    return "\n".join(out) + "\n"


__all__ = ["counts", "lines", "markdown"]
