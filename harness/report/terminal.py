"""A campaign as the terminal shows it, from its report document: the table of rows, the
figures line, the causes (each with its sentence and the groups that come with it), the
groups that fail it, the low ones, the accepted ones, what happens without a crash, and
why a campaign that stopped early stopped. What did not run is said here once, and the
Markdown summary (report.github) and the HTML page say it by these same lines.

`killpoint matrix` prints this at its end; `merge` and `report` write it (`--text`). The
lines carry a style name ("red" for what fails) that the cli's console may colour; run
content is plain text here and made safe where it is printed (killpoint.cli.output.plain).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from io import StringIO
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from killpoint.redaction import redact
from killpoint.report.planned import (
    NotPlanned,
    NotRun,
    count_not_run,
    no_crash_rows,
    not_planned_lines,
    not_run_of,
    read_not_planned,
    read_planned,
    shown_cell,
)
from killpoint.report.text import (
    causes_heading,
    cut,
    failing,
    failing_causes,
    heading,
    verdicts_said,
)
from killpoint.values.durations import duration
from killpoint.values.sentences import count
from killpoint.values.shown import line
from killpoint.values.shown import lines as shown_lines

SHOWN_GROUPS = 30
SHOWN_DETAILS = 6  # a cause's groups listed under it; the rest are counted
SHOWN_NOT_PLANNED = 8  # rows whose baseline failed, named one by one; the rest are counted
SHOWN_PARTIAL = 8  # rows a stopped campaign did not wholly cover, named; the rest counted

Line = tuple[str, str | None]  # text, style


def _cells(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in document.get("cells") or [] if isinstance(c, Mapping)]


def _fails(cell: Mapping[str, Any]) -> bool:
    from killpoint.values.findings import fails, open_severity

    if cell.get("expected") or cell.get("accepted"):
        return False
    return fails(open_severity(cell.get("findings") or []) or "high")


def _low(cell: Mapping[str, Any]) -> bool:
    return not cell.get("expected") and not cell.get("accepted") and not _fails(cell)


ROW_COLUMNS = ("scenario", "mode")  # what names a row; the other columns are of it
WORD_COLUMNS = (*ROW_COLUMNS, "not run")  # aligned left: words ("whole row"), not figures


@dataclass(frozen=True)
class TableRow:
    """A row of the table: what follows its scenario and mode, one text per column."""

    scenario: str
    mode: str
    figures: tuple[str, ...]
    failing: bool  # a cell of it fails the campaign


def table_rows(document: Mapping[str, Any]) -> tuple[list[str], list[TableRow]]:
    """The table's columns and rows: every planned row, in the plan's order, then any row
    of a cell the plan does not name (a report written before the plan was kept). Its
    cells, ok, expected losses, unexpected, low, duplicates, and the cells that never ran,
    planned or not planned since the row's baseline failed (`low only` and `not run` only
    when there are some). The terminal's table and the Markdown summary's (report.github)
    are both these, so that neither has a column the other lacks."""
    cells = _cells(document)
    plan = read_planned(document) or {}
    missing = not_run_of(document)
    unrun = {m.row[1:3]: m for m in missing}
    unplanned = {n.row[1:3]: n for n in read_not_planned(document)}
    low = any(_low(c) for c in cells)
    names = [*ROW_COLUMNS, "cells", "ok", "lost (expected)", "unexpected"]
    names += [*(["low only"] if low else []), "dups"]
    names += ["not run"] if missing or unplanned else []
    rows: dict[tuple[str, str], list[int]] = {row[1:3]: [0] * 6 for row in plan}
    for c in cells:
        r = rows.setdefault((str(c.get("scenario")), str(c.get("mode"))), [0] * 6)
        r[0] += 1
        r[1] += c.get("verdict") == "ok"
        r[2] += c.get("verdict") == "lost" and bool(c.get("expected"))
        r[3] += _fails(c)
        r[4] += _low(c)
        r[5] += int(c.get("duplicates") or 0)
    found = []
    for (scenario, mode), r in rows.items():
        m, n = unrun.get((scenario, mode)), unplanned.get((scenario, mode))
        left = [not_run_text(m, n)] if missing or unplanned else []
        figures = [*r[:4], *([r[4]] if low else []), r[5]]
        found.append(TableRow(scenario, mode, (*map(str, figures), *left), bool(r[3])))
    return names, found


def table(document: Mapping[str, Any]) -> Table:
    """The table of rows (`table_rows`), a failing row in red."""
    names, rows = table_rows(document)
    out = Table(title="crash matrix", show_lines=False)
    for name in names:
        out.add_column(name, justify="left" if name in WORD_COLUMNS else "right")
    for row in rows:
        out.add_row(
            escape(line(redact(row.scenario))),
            escape(line(redact(row.mode))),
            *row.figures,
            style="red" if row.failing else None,
        )
    return out


def not_run_text(m: NotRun | None, n: NotPlanned | None = None) -> str:
    """A row's cells that never ran, for its column: a count of those planned, or why there
    is none; and those not planned, its baseline having failed."""
    planned = "" if m is None else "whole row" if m.schedules is None else str(len(m.schedules))
    return ", ".join(t for t in (planned, "" if n is None else n.short()) if t)


def figures_line(document: Mapping[str, Any]) -> str:
    """The campaign in one line: cells, unexpected (in how many causes), low, row-level
    groups, accepted, errors, expected losses, duplicates (and how many beyond the bound),
    the time taken."""
    f = document.get("summary") or {}
    causes = [c for c in document.get("causes") or [] if isinstance(c, Mapping)]
    unexpected = int(f.get("unexpected") or 0)
    dups = int(f.get("duplicates") or 0)
    beyond = f.get("duplicates_beyond_bound")
    where = ""
    if unexpected:
        where = (
            f" from {count(failing_causes(causes), 'cause')}"
            if causes
            else f" in {count(int(f.get('groups') or 0), 'group')}"
        )
    seconds = float(f.get("seconds") or 0)
    rate = f.get("cells_per_second") or 0
    return (
        f"{count(int(f.get('cells') or 0), 'cell')}, {unexpected} unexpected{where}"
        + (f", {f['low']} unexpected at low severity only" if f.get("low") else "")
        + (
            f", {count(int(f['without_crash']), 'row-level group')} without a crash"
            if f.get("without_crash")
            else ""
        )
        + (f", {f['accepted']} accepted" if f.get("accepted") else "")
        + (f", {count(int(f['errors']), 'killpoint error')}" if f.get("errors") else "")
        + f", {count(int(f.get('expected_losses') or 0), 'expected loss')}, "
        + f"{count(dups, 'duplicate')}"
        + (f" ({beyond} beyond the bound)" if beyond is not None and dups else "")
        + f", {duration(seconds)} ({rate} cells/s)"
        + ended_early(document)
    )


def ended_early(document: Mapping[str, Any]) -> str:
    """The headline's mark of a campaign that did not run its whole plan: its figures are
    partial, seen at once (the lines below say why and what it covered)."""
    if document.get("interrupted"):
        return " (interrupted)"
    if document.get("stopped"):  # --fail-fast, --budget
        return " (stopped early)"
    return ""


def cause_lines(document: Mapping[str, Any]) -> list[Line]:
    """Each cause: its name, cells and state, its sentence, the groups that come with it,
    one example and its replay."""
    causes = [c for c in document.get("causes") or [] if isinstance(c, Mapping)]
    if not causes:
        return []
    lines: list[Line] = [(f"causes: {causes_heading(causes)}, most impact first", None)]
    no_crash = no_crash_rows(document)  # an example there made no crash: named as its row
    for n, c in enumerate(causes, start=1):
        if c.get("accepted"):
            state, style = f"accepted ({cut(str(c['accepted']), 120)})", None
        elif c.get("failing_cells"):
            state, style = f"{c['failing_cells']} failing", "red"
        else:
            state, style = f"{c.get('severity')} severity, fails nothing", None
        verdicts = verdicts_said(c.get("verdicts"))
        lines.append(
            (
                f"{n}. {c.get('name')}: {count(int(c.get('count') or 0), 'cell')} ({verdicts}), "
                f"{count(len(c.get('rows') or []), 'row')}, {state}",
                style,
            )
        )
        lines.append((f"   {cut(str(c.get('sentence', '')), 400)}", None))
        details = [g for g in c.get("groups") or [] if isinstance(g, Mapping)]
        shown = ", ".join(f"{g.get('key')} ({g.get('cells')})" for g in details[:SHOWN_DETAILS])
        more = len(details) - SHOWN_DETAILS
        if shown:
            lines.append((f"   groups: {shown}" + (f" and {more} more" if more > 0 else ""), None))
        example = shown_cell(c.get("example_cell"), no_crash)
        lines.append((f"   e.g. {example}: {cut(str(c.get('example', '')))}", None))
        lines.append((f"   replay: {c.get('replay')}", None))
    return lines


def group_lines(document: Mapping[str, Any]) -> list[Line]:
    """The groups that fail the campaign, each once; then the low and the accepted ones."""

    groups = [g for g in document.get("groups") or [] if isinstance(g, Mapping)]
    failing_groups = [g for g in failing(document) if not g.get("without_crash")]
    no_crash = no_crash_rows(document)  # an example there made no crash: named as its row
    lines: list[Line] = []
    if failing_groups:
        lines.append((f"groups of findings failing the campaign: {len(failing_groups)}", None))
    for n, g in enumerate(failing_groups[:SHOWN_GROUPS], start=1):
        verdicts = verdicts_said(g.get("verdicts"), g.get("verdict"))
        lines.append(
            (
                f"{n}. {heading(g)}: {count(int(g.get('count') or 0), 'cell')}"
                f"{f' ({verdicts})' if verdicts else ''}",
                "red",
            )
        )
        lines.append((f"   {cut(str(g.get('meaning', '')))}", None))
        example = shown_cell(g.get("example_cell"), no_crash)
        lines.append((f"   e.g. {example}: {cut(str(g.get('example', '')))}", None))
        lines.append((f"   replay: {g.get('replay')}", None))
    if len(failing_groups) > SHOWN_GROUPS:
        more = len(failing_groups) - SHOWN_GROUPS
        lines.append((f"... and {count(more, 'more group')} in the JSON", None))
    keys = {g.get("key") for g in failing_groups}
    for other in groups:
        if other.get("key") in keys or other.get("accepted"):
            continue
        n = int(other.get("count") or 0)
        lines.append(
            (
                f"{other.get('severity')}: {heading(other)}: {count(n, 'cell')}: "
                f"{cut(str(other.get('example', '')))}",
                None,
            )
        )
    for known in groups:
        if known.get("accepted"):
            n = int(known.get("count") or 0)
            lines.append(
                (
                    f"accepted: {known.get('key')}: {count(n, 'cell')}: "
                    f"{cut(str(known['accepted']))}",
                    None,
                )
            )
    return lines


def without_crash_lines(document: Mapping[str, Any]) -> list[Line]:
    """Row-level findings: the uninterrupted run already shows them, so they are the
    row's, once, and no crash cell is charged with them."""

    groups = [g for g in document.get("without_crash") or [] if isinstance(g, Mapping)]
    if not groups:
        return []
    lines: list[Line] = [(f"happens without a crash: {count(len(groups), 'group')}", "red")]
    for n, g in enumerate(groups, start=1):
        rows = list(g.get("rows") or [])
        state = f"accepted: {cut(str(g['accepted']))}" if g.get("accepted") else g.get("verdict")
        lines.append(
            (
                f"{n}. {heading(g)}: {count(len(rows), 'row')}, {state}",
                None if g.get("accepted") else "red",
            )
        )
        lines.append((f"   {cut(str(g.get('meaning', '')))}", None))
        lines.append((f"   e.g. {g.get('example_row')}: {cut(str(g.get('example', '')))}", None))
        lines.append((f"   rerun: {g.get('replay')}", None))
    return lines


def preamble_lines(document: Mapping[str, Any]) -> list[Line]:
    """What the table cannot say: cells planned and never run, rows not planned (their
    baseline failed) and why, skipped rows."""
    lines: list[Line] = []
    missing = not_run_of(document)
    if missing:
        n_cells, unplanned = count_not_run(missing)
        started = [m for m in missing if m.never_started]
        parts = [count(n_cells, "planned cell")] if n_cells else []
        if unplanned:
            parts.append(f"{count(unplanned, 'row')} whose cells were never planned")
        text = f"not run: {' and '.join(parts)}"
        if document.get("interrupted"):
            text += " (the campaign was interrupted)"
        elif document.get("stopped"):
            text += " (the campaign stopped early)"
        else:
            text += " (no result)"
        if started:
            text += f"; never started: {', '.join('/'.join(m.row[1:3]) for m in started)}"
        lines.append((text, None))
    lines += [(t, None) for t in not_planned_lines(read_not_planned(document), SHOWN_NOT_PLANNED)]
    for s in document.get("skipped") or []:
        if isinstance(s, Mapping):
            lines.append(
                (
                    f"skipped {s.get('scenario')}/{s.get('mode')}: {cut(str(s.get('reason', '')))}",
                    None,
                )
            )
    return lines


def stopped_lines(document: Mapping[str, Any]) -> list[Line]:
    """A campaign that stopped early (--fail-fast, --budget): why, and what it covered; the
    rows not every kind of whose points ran, named (a few). From the report's `stopped`, by
    the campaign's own Stopped, so that every output of the report says it alike."""
    from killpoint.engine.stop_rule import Stopped

    data = document.get("stopped")
    if not isinstance(data, Mapping):
        return []
    stopped = Stopped.from_json(data)
    return [
        (f"stopped: {stopped.sentence()}", None),
        *((f"  {row}", None) for row in stopped.partial_lines(SHOWN_PARTIAL)),
    ]


def note_lines(document: Mapping[str, Any]) -> list[Line]:
    return [
        (f"note {b.get('scenario')}/{cut(str(b['trace_note']))}", None)
        for b in document.get("baselines") or []
        if isinstance(b, Mapping) and b.get("trace_note")
    ]


def lines(document: Mapping[str, Any], *, quiet: bool = False) -> list[Line]:
    """Every line below the table, in order."""
    return [
        *preamble_lines(document),
        *([] if quiet else note_lines(document)),
        (figures_line(document), None),
        *cause_lines(document),
        *group_lines(document),
        *without_crash_lines(document),
        *stopped_lines(document),
    ]


def render(document: Mapping[str, Any]) -> str:
    """The terminal's summary as plain text (no colour), lines whole: each line as the
    terminal prints it (killpoint.cli.output.plain: masked, one line, no workflow command),
    and the whole written once more through killpoint.values.shown, line by line, so that
    no line of the file, the table's included, can command a CI step that shows it."""
    buffer = StringIO()
    console = Console(
        file=buffer, width=200, no_color=True, color_system=None, soft_wrap=True, emoji=False
    )
    console.print(table(document))
    for text, _ in lines(document):
        console.print(line(redact(text)), markup=False, highlight=False)
    # The one place the file's text passes: whatever a line above (or a renderer's wrap)
    # holds, no line of it starts a workflow command or carries a control character.
    return shown_lines(buffer.getvalue())


__all__ = [
    "ROW_COLUMNS",
    "WORD_COLUMNS",
    "TableRow",
    "cause_lines",
    "ended_early",
    "figures_line",
    "group_lines",
    "lines",
    "not_run_text",
    "preamble_lines",
    "render",
    "stopped_lines",
    "table",
    "table_rows",
    "without_crash_lines",
]
