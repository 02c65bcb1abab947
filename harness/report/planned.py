"""The cells a campaign planned, as its JSON report keeps them, and which of them never ran.

A report without its plan cannot tell a cell that was planned and never ran (the campaign
was interrupted, or stopped before a row's baseline finished) from one that does not apply
to its row (no such crash point in its baseline). So the document keeps the plan, one entry
per row with the schedules of its cells (about 25 bytes a cell):

    "planned_cells": [
      {"runtime": "agno", "scenario": "cancel", "mode": "runs", "store": "sqlite",
       "schedules": ["after-checkpoint:1", "mid-batch:4:0", ...]},
      {"runtime": "agno", "scenario": "confirm", "mode": "runs", "store": "sqlite",
       "schedules": null}
    ]

`schedules` null: the campaign stopped before that row's cells were planned. A report
written before the plan was kept has no `planned_cells`; it reads as it always did.

A row whose baseline failed has one cell planned, which carries the failure without a
crash; its crash cells were not planned. Its baseline says so (`baselines[]`, which a merge
of shards keeps as it keeps the plan: each shard's cells of a row together), with how many crash cells the row would
have had when its run reached its end:

    {"scenario": "research", ..., "problem": "...", "not_planned": true,
     "cells_not_planned": 14}

That cell's id keeps the point it was planned at (`kinds.stand_in()`, or the first point
asked for), which replay and --rerun-failed read; every output shows it as what it is, a
cell without a crash (NO_CRASH, `shown_cell`), never as a crash at that point.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from killpoint.engine.stop_rule import Stopped
from killpoint.report.text import cut
from killpoint.values.cell import Row
from killpoint.values.input_files import read_int
from killpoint.values.sentences import count, verb

ROW_FIELDS = ("runtime", "scenario", "mode", "store")


@dataclass(frozen=True)
class NotRun:
    """A planned row with cells that never ran: which (`schedules`), or None when the
    campaign stopped before the row's cells were planned."""

    row: Row
    schedules: tuple[str, ...] | None
    ran: int  # cells of the row that did run

    @property
    def never_started(self) -> bool:
        return self.ran == 0


def planned_json(plan: Mapping[Row, Sequence[str] | None]) -> list[dict[str, Any]]:
    """A campaign's plan (CampaignResult.plan) as the document keeps it."""
    return [
        {**dict(zip(ROW_FIELDS, row, strict=True)), "schedules": None if s is None else list(s)}
        for row, s in plan.items()
    ]


def read_planned(document: Mapping[str, Any]) -> dict[Row, tuple[str, ...] | None] | None:
    """The plan a document keeps ({row: schedules}); None for a report written without one
    (it cannot tell "not run" from "not applicable")."""
    found = document.get("planned_cells")
    if not isinstance(found, list):
        return None
    plan: dict[Row, tuple[str, ...] | None] = {}
    for entry in found:
        if not isinstance(entry, Mapping):
            continue
        row = tuple(str(entry.get(k, "")) for k in ROW_FIELDS)
        schedules = entry.get("schedules")
        plan[row] = (  # type: ignore[index]
            None if not isinstance(schedules, list) else tuple(str(s) for s in schedules)
        )
    return plan


def not_run(
    plan: Mapping[Row, Sequence[str] | None], ran: Iterable[tuple[Row, str]]
) -> list[NotRun]:
    """The planned rows whose cells did not all run, in plan order; `ran`: (row, schedule)
    of each cell that has a result."""
    done: dict[Row, set[str]] = {}
    for row, schedule in ran:
        done.setdefault(row, set()).add(schedule)
    found = []
    for row, schedules in plan.items():
        mine = done.get(row, set())
        if schedules is None:
            found.append(NotRun(row, None, len(mine)))
            continue
        left = tuple(s for s in schedules if s not in mine)
        if left:
            found.append(NotRun(row, left, len(mine)))
    return found


def count_not_run(missing: Iterable[NotRun]) -> tuple[int, int]:
    """(cells planned and not run, rows whose cells were never planned)."""
    cells = rows = 0
    for m in missing:
        if m.schedules is None:
            rows += 1
        else:
            cells += len(m.schedules)
    return cells, rows


@dataclass(frozen=True)
class NotPlanned:
    """A row whose baseline failed (`why`): its crash cells were not planned, and `cells`
    says how many it would have had (None: not known, its run stopped short)."""

    row: Row
    why: str
    cells: int | None

    def what(self) -> str:
        """Which cells were not planned: the count its run offered (what a campaign plans
        from; a runtime that ends differently once fixed may offer more), or its points."""
        if self.cells is None:
            return "its points were not planned"
        n = self.cells
        return f"the {count(n, 'crash cell')} its run offered {verb(n, 'was', 'were')} not planned"

    def short(self) -> str:
        """For a table's cell: how many, or that the whole row was not planned."""
        return "not planned" if self.cells is None else f"{self.cells} not planned"

    def line(self) -> str:
        return (
            f"{self.row[1]}/{self.row[2]}: its baseline failed, so {self.what()}: {cut(self.why)}"
        )


def not_planned_json(not_planned: Mapping[Row, int | None], row: Row) -> dict[str, Any]:
    """What a baseline's entry says of its row's crash cells (CampaignResult.not_planned):
    nothing for a row that was planned."""
    if row not in not_planned:
        return {}
    return {"not_planned": True, "cells_not_planned": not_planned[row]}


def read_not_planned(document: Mapping[str, Any]) -> list[NotPlanned]:
    """The rows a document's baselines say were not planned, in its baselines' order."""
    found = []
    for base in document.get("baselines") or []:
        if not isinstance(base, Mapping) or base.get("not_planned") is not True:
            continue
        row: Row = tuple(str(base.get(k, "")) for k in ROW_FIELDS)  # type: ignore[assignment]
        why = base.get("problem") or base.get("nondeterministic") or "no reason kept"
        cells = base.get("cells_not_planned")
        found.append(NotPlanned(row, str(why), cells if isinstance(cells, int) else None))
    return found


# How every output shows the point of a cell that made no crash (a row whose baseline failed
# has one; its id keeps the point it was planned at, `kinds.stand_in()`, so that replay and
# --rerun-failed read it as any other id), and what that "point" means.
NO_CRASH = "no crash (the row's baseline failed)"
NO_CRASH_MEANS = (
    "the row's uninterrupted run failed, so none of its crash cells was planned; this cell "
    "carries that failure, without a crash"
)


def row_of(cell: Mapping[str, Any]) -> Row:
    """The row a cell of a document is in."""
    return tuple(str(cell.get(k, "")) for k in ROW_FIELDS)  # type: ignore[return-value]


def no_crash_rows(document: Mapping[str, Any]) -> frozenset[Row]:
    """The rows whose cells made no crash: their baseline failed. Such a row has the one cell
    planned for it (or, in a rerun, the cells asked for), each carrying the failure."""
    return frozenset(n.row for n in read_not_planned(document))


def shown_cell(cell_id: object, rows: Collection[Row]) -> str:
    """A cell's id where a report names it as an example: a cell of a row in `rows`
    (no_crash_rows) as its row, without a crash, never as the point its id keeps."""
    text = str(cell_id)
    row = text.rpartition("/")[0]  # a schedule never holds a slash; a scenario may
    if any(row == "/".join(r) for r in rows):
        return f"{row} (no crash: its baseline failed)"
    return text


def not_run_of(document: Mapping[str, Any]) -> list[NotRun]:
    """The planned rows of a document whose cells did not all run (none without its plan)."""
    plan = read_planned(document)
    if not plan:
        return []
    ran = (
        (row_of(c), "+".join(str(p) for p in c.get("schedule") or []))
        for c in document.get("cells") or []
        if isinstance(c, Mapping)
    )
    return not_run(plan, ran)


def not_run_reason(document: Mapping[str, Any]) -> str:
    """Why a document's planned cells did not all run, as a clause: "the campaign was
    interrupted", "the campaign stopped at its time budget (5 min 0 s)", ... (by the
    campaign's own Stopped), or that the document holds no result for them."""
    if document.get("interrupted"):
        return "the campaign was interrupted"
    data = document.get("stopped")
    if isinstance(data, Mapping):
        return f"the campaign {Stopped.from_json(data).why()}"
    return "the report holds no result for them"


def incomplete(document: Mapping[str, Any]) -> str | None:
    """What of its plan a document's campaign did not run, in one sentence ("310 of 345
    planned cells did not run because the campaign was interrupted"); None when it ran all
    of it. A document without its plan (an older report, or a merge of such) counts from its
    summary, and says so when even that cannot tell."""
    figures = document.get("summary") or {}
    planned, ran = (read_int(figures.get(k)) or 0 for k in ("planned", "cells"))
    why = not_run_reason(document)
    if read_planned(document):
        cells, rows = count_not_run(not_run_of(document))
    elif document.get("interrupted") or document.get("stopped"):
        cells, rows = max(planned - ran, 0), 0
        if not cells:  # it ended before it planned them all, or after it ran them all
            return f"{why}, and its report does not keep which planned cells did not run"
    else:
        return None
    parts = [f"{cells} of {count(planned, 'planned cell')} did not run"] if cells else []
    if rows:
        parts.append(f"the cells of {count(rows, 'row')} were never planned")
    return f"{' and '.join(parts)} because {why}" if parts else None


def not_planned_lines(found: Sequence[NotPlanned], limit: int) -> list[str]:
    """The rows not planned, a heading and a line each, at most `limit` of them and then
    how many more (as Stopped.partial_lines names the rows a stop cut short)."""
    if not found:
        return []
    whose = verb(len(found), "its", "each row's")
    lines = [
        f"not planned: {count(len(found), 'row')} whose baseline failed; "
        f"{whose} one cell carries the failure, without a crash"
    ]
    lines += [f"  {n.line()}" for n in found[:limit]]
    if len(found) > limit:
        lines.append(f"  and {count(len(found) - limit, 'more row')} (the JSON's `baselines`)")
    return lines


__all__ = [
    "NO_CRASH",
    "NO_CRASH_MEANS",
    "ROW_FIELDS",
    "NotPlanned",
    "NotRun",
    "Row",
    "count_not_run",
    "incomplete",
    "no_crash_rows",
    "not_planned_json",
    "not_planned_lines",
    "not_run",
    "not_run_of",
    "not_run_reason",
    "planned_json",
    "read_not_planned",
    "read_planned",
    "row_of",
    "shown_cell",
]
