"""What the `killpoint` command prints: progress on stderr, results on stdout.

The table, the groups of findings and the `written:` line go to standard output, so that
`killpoint matrix > log` and `| tee` keep them; progress and notes go to standard error.
Run content (a runtime's error message, a scenario's name) is printed as text, never as
rich markup, and through killpoint.values.shown.line: one line each, so that nothing a
run or a report file holds can drive the terminal or command a CI runner (a line
beginning with `::` under GitHub Actions). Without a terminal, lines are not wrapped and
names are not cut.
"""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from killpoint.cli import colour, verbosity
from killpoint.cli.exit_codes import EXIT_USAGE
from killpoint.engine.cell_log import heads
from killpoint.redaction import redact
from killpoint.report.planned import NotRun, count_not_run, not_run
from killpoint.report.text import cut
from killpoint.values.sentences import count
from killpoint.values.shown import line

if TYPE_CHECKING:
    from killpoint.engine.campaign import CampaignResult
    from killpoint.judge.groups import Accepted, Group

WIDE = 200  # columns when the output is not a terminal: a log keeps every line whole
SHOWN_GROUPS = 30


def is_terminal(stream: Any) -> bool:
    return hasattr(stream, "isatty") and stream.isatty()


def console(stream: Any) -> Console:
    """A console on `stream`: wrapped to a terminal's width, or lines whole in a log;
    coloured as killpoint.cli.colour decides (a forced colour does not make a log a
    terminal: its lines stay whole, and live progress stays off)."""
    terminal = is_terminal(stream)
    colours = colour.coloured(terminal, os.environ)
    return Console(
        file=stream,
        width=None if terminal else WIDE,
        soft_wrap=not terminal,
        force_terminal=True if colours else None,
        no_color=not colours,
        color_system="auto" if colours else None,
    )


def stdout() -> Console:
    return console(sys.stdout)


def stderr() -> Console:
    return console(sys.stderr)


def usage_error(message: str) -> int:
    """Bad input: one line on stderr, and the exit status that says so (2)."""
    plain(stderr(), message)
    return EXIT_USAGE


def plain(out: Console, text: str, style: str | None = None) -> None:
    """One line: brackets in it are not markup; secrets masked; control characters (an
    escape sequence from run content) and newlines shown escaped, never sent to the
    terminal; no workflow command (killpoint.values.shown.line)."""
    out.print(line(redact(text)), markup=False, highlight=False, emoji=False, style=style)


def summary(result: CampaignResult, out: Console, groups: list[Group]) -> None:
    # Cells planned and never ran (an interrupt): a column of their own, and the rows
    # never started drawn too, never left out.
    missing = not_run(
        result.plan,
        (
            ((c.runtime, c.scenario, c.mode, c.store), "+".join(c.schedule))
            for c in heads(result.cells)
        ),
    )
    unrun = {m.row[1:3]: m for m in missing}
    table = Table(title="crash matrix", show_lines=False)
    names = ["scenario", "mode", "cells", "ok", "lost (expected)", "unexpected", "dups"]
    for name in [*names, *(["not run"] if missing else [])]:
        table.add_column(name, justify="left" if name in ("scenario", "mode") else "right")
    rows: dict[tuple[str, str], list[int]] = {row[1:3]: [0] * 5 for row in result.plan}
    for c in heads(result.cells):
        r = rows.setdefault((c.scenario, c.mode), [0, 0, 0, 0, 0])
        r[0] += 1
        r[1] += c.verdict == "ok"
        r[2] += c.verdict == "lost" and c.expected
        r[3] += c.failing
        r[4] += c.duplicates
    for (scenario, mode), r in rows.items():
        m = unrun.get((scenario, mode))
        left = [] if not missing else ["" if m is None else not_run_text(m)]
        table.add_row(
            escape(line(redact(scenario))),
            escape(line(redact(mode))),
            *map(str, r),
            *left,
            style="red" if r[3] else None,
        )
    if not verbosity.quiet():  # the figures line below says it in one line
        out.print(table)
    if missing:
        cells, unplanned = count_not_run(missing)
        started = [m for m in missing if m.never_started]
        parts = [count(cells, "planned cell")] if cells else []
        if unplanned:
            parts.append(f"{count(unplanned, 'row')} whose cells were never planned")
        text = f"not run: {' and '.join(parts)}"
        text += " (the campaign was interrupted)" if result.interrupted else " (no result)"
        if started:
            text += f"; never started: {', '.join('/'.join(m.row[1:3]) for m in started)}"
        plain(out, text)
    for s in result.skipped:
        plain(out, f"skipped {s.scenario}/{s.mode}: {cut(s.reason)}")
    for b in result.baselines:
        if b.trace_note and not verbosity.quiet():
            plain(out, f"note {b.scenario}/{cut(b.trace_note)}")
    figures = result.summary()
    plain(
        out,
        f"{count(figures['cells'], 'cell')}, {figures['unexpected']} unexpected"
        + (f" in {count(figures['groups'], 'group')}" if figures["unexpected"] else "")
        + (
            f", {count(figures['without_crash'], 'row-level group')} without a crash"
            if figures["without_crash"]
            else ""
        )
        + (f", {figures['accepted']} accepted" if figures["accepted"] else "")
        + (f", {count(figures['errors'], 'killpoint error')}" if figures["errors"] else "")
        + f", {count(figures['expected_losses'], 'expected loss')}, "
        f"{count(figures['duplicates'], 'duplicate')}, "
        f"{figures['seconds']} s ({figures['cells_per_second']} cells/s)",
    )
    show_groups(groups, out)
    show_without_crash(result.row_groups(), out)


def show_without_crash(groups: list[Group], out: Console) -> None:
    """Row-level findings: the uninterrupted run already shows them, so they are the
    row's, once, and no crash cell is charged with them."""
    if not groups:
        return
    plain(out, f"happens without a crash: {count(len(groups), 'group')}", style="red")
    for n, g in enumerate(groups, start=1):
        state = f"accepted: {cut(g.accepted)}" if g.accepted else g.verdict
        plain(
            out,
            f"{n}. {g.heading}: {count(len(g.cells), 'row')}, {state}",
            style=None if g.accepted else "red",
        )
        plain(out, f"   {cut(g.meaning)}")
        plain(out, f"   e.g. {g.example_cell}: {cut(g.example)}")
        plain(out, f"   rerun: {g.replay}")


def show_groups(groups: list[Group], out: Console) -> None:
    """Each cause once: count, explanation, one example and its replay."""
    failing = [g for g in groups if g.verdict != "ok" and not g.accepted]
    for n, g in enumerate(failing[:SHOWN_GROUPS], start=1):
        plain(out, f"{n}. {g.heading}: {count(len(g.cells), 'cell')}, {g.verdict}", style="red")
        plain(out, f"   {cut(g.meaning)}")
        plain(out, f"   e.g. {g.example_cell}: {cut(g.example)}")
        plain(out, f"   replay: {g.replay}")
    if len(failing) > SHOWN_GROUPS:
        plain(out, f"... and {count(len(failing) - SHOWN_GROUPS, 'more group')} in the JSON")
    low = [g for g in groups if g.verdict == "ok"]
    for g in low:
        plain(out, f"low: {g.heading}: {count(len(g.cells), 'cell')}: {cut(g.example)}")
    for g in groups:
        if g.accepted:
            plain(out, f"accepted: {g.key}: {count(len(g.cells), 'cell')}: {cut(g.accepted)}")


def not_run_text(m: NotRun) -> str:
    """A row's cells that never ran, for its column: a count, or why there is none."""
    if m.schedules is None:
        return "whole row"
    return str(len(m.schedules))


def finding_lines(findings: list[dict[str, Any]]) -> list[str]:
    """A cell's findings, one line each, the deciding one first: the unexpected ones by
    kind, then those allowed here, marked so (an allowed finding never reads as the
    problem)."""
    lines = [
        f"{f.get('kind')}: {cut(str(f.get('sentence', '')))}"
        for f in findings
        if not f.get("expected")
    ]
    lines += [
        f"allowed here, {f.get('kind')}: {cut(str(f.get('sentence', '')))}"
        for f in findings
        if f.get("expected")
    ]
    return lines


def no_cells(result: CampaignResult, err: Console) -> None:
    """A campaign that ran nothing: said so, with every reason something was skipped (in
    full: a reason names what to install)."""
    reasons = list(dict.fromkeys(s.reason for s in result.skipped))
    plain(
        err,
        "killpoint: no cell ran (exit 5): "
        + (
            f"{count(len(result.skipped), 'skip')}, for {count(len(reasons), 'reason')}:"
            if reasons
            else "the selection planned none (check --points, --modes and --scenarios)"
        ),
    )
    for reason in reasons:
        rows = [f"{s.scenario}/{s.mode}" for s in result.skipped if s.reason == reason]
        shown = ", ".join(rows[:4]) + (f" and {len(rows) - 4} more" if len(rows) > 4 else "")
        plain(err, f"  {reason} ({shown})")


def show_unmet(unmet: list[tuple[Accepted, str]], narrowed: str | None, out: Console) -> None:
    """Accepted groups not met: "not exercised" after a narrowed campaign (saying how it
    was narrowed), "no longer occurs" only after a whole one."""
    for a, status in unmet:
        why = f"; this campaign ran {narrowed}" if narrowed and status != "no longer occurs" else ""
        plain(out, f"{status}: the accepted group {a.group} ({cut(a.reason)}){why}")


__all__ = [
    "console",
    "cut",
    "finding_lines",
    "is_terminal",
    "no_cells",
    "plain",
    "show_groups",
    "show_unmet",
    "show_without_crash",
    "stderr",
    "stdout",
    "summary",
]
