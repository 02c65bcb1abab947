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
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from killpoint.values.cell import Row

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


__all__ = [
    "ROW_FIELDS",
    "NotRun",
    "Row",
    "count_not_run",
    "not_run",
    "planned_json",
    "read_planned",
]
