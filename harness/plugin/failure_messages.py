"""What a failed crash cell says: verdict, first difference, replay command and seed.

Shared by the matrix items and the `crash` fixture, so a cell reads the same whichever
ran it. No pytest here: these are strings. Each line is composed here and made one line
by killpoint.values.shown.line: a finding's sentence, a timeline event or a line of a
worker's output holds run content, whose newlines are shown escaped and which can never
begin a line of the CI log as a workflow command.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from killpoint.redaction import redact
from killpoint.values.durations import offset
from killpoint.values.sentences import count
from killpoint.values.shown import line

if TYPE_CHECKING:
    from killpoint.values.cell import CellResult


def finding_lines(result: CellResult, indent: str = "  ", limit: int = 8) -> list[str]:
    """One line per finding that is not allowed here, most severe first."""
    shown = [f for f in result.findings if not f.get("expected") and f.get("verdict") != "ok"]
    lines = [line(f"{indent}{f.get('kind')}: {f.get('sentence')}") for f in shown[:limit]]
    if len(shown) > limit:
        lines.append(f"{indent}... and {count(len(shown) - limit, 'more finding')} in the JSON")
    return lines


def cell_failure(result: CellResult, seed: int) -> str:
    lines = [
        f"killpoint: {result.id}",
        f"  verdict:          {result.verdict} (unexpected for {result.mode} at "
        f"{'+'.join(result.schedule)})",
        f"  detail:           {result.detail or '-'}",
        "  findings:",
        *finding_lines(result, "    "),
        f"  duplicates:       {result.duplicates} (bound {result.bound})",
        f"  replay:           {result.replay}",
        f"  seed:             {seed} (--crash-seed {seed})",
    ]
    if result.kept:
        lines.append(f"  kept:             {result.kept} (store, ledger, worker logs)")
    if result.timeline:
        lines.append("  timeline:")
        lines += [f"    {offset(e.t):>10}  {e.text}" for e in result.timeline[-15:]]
    if result.stderr_tail.strip():
        lines.append("  worker stderr (tail):")
        lines += [f"    {line}" for line in result.stderr_tail.strip().splitlines()[-20:]]
    return "\n".join(line(redact(each)) for each in lines)


__all__ = ["cell_failure", "finding_lines"]
