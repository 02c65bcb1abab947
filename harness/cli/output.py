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
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from rich.console import Console

from killpoint.cli import colour, verbosity
from killpoint.cli.exit_codes import EXIT_USAGE
from killpoint.redaction import redact
from killpoint.report.text import cut
from killpoint.values.sentences import count
from killpoint.values.shown import line, lines

if TYPE_CHECKING:
    from killpoint.engine.campaign import CampaignResult
    from killpoint.judge.groups import Accepted

WIDE = 200  # columns when the output is not a terminal: a log keeps every line whole


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


def block(out: Console, text: str, indent: str = "") -> None:
    """Run content that has room for its lines (a traceback in a replay's timeline): its
    line breaks kept, every further line under `indent`, each line made safe as `plain`
    makes one (killpoint.values.shown.lines), secrets masked first."""
    shown = lines(redact(text)).replace("\n", "\n" + indent)
    out.print(shown, markup=False, highlight=False, emoji=False)


def summary(document: Mapping[str, Any], out: Console) -> None:
    """The campaign's summary, from its report document (killpoint.report.terminal): the
    table of rows (unless quiet), then the figures, the causes, the groups, what happens
    without a crash, and why a campaign that stopped early stopped (its `--text`, its
    Markdown summary and its step summary say the same lines)."""
    from killpoint.report import terminal

    if not verbosity.quiet():  # the figures line says it in one line
        out.print(terminal.table(document))
    for text, style in terminal.lines(document, quiet=verbosity.quiet()):
        plain(out, text, style=style)


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
    if result.stopped is not None:
        plain(err, f"killpoint: no cell ran (exit 5): {result.stopped.sentence()}")
        return
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
    "block",
    "console",
    "cut",
    "finding_lines",
    "is_terminal",
    "no_cells",
    "plain",
    "show_unmet",
    "stderr",
    "stdout",
    "summary",
]
