"""When a campaign stops before its plan is done, and what it covered by then.

`--fail-fast` stops at the first unexpected cell; `--budget 5m` stops once that much time
has passed since the campaign began. Either way the cells at work are stopped (their
workers killed, as at an interrupt), the cells not started are "not run" in the reports,
and what the campaign covered is said: cells run of planned, and per row the kinds of
point that ran at least once, of those planned. A campaign that runs the most
informative cells first (killpoint.engine.run_order) covers every kind of most rows
early, so a budget buys coverage, not only cells.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from killpoint.values.cell import CellResult, Row
from killpoint.values.durations import duration
from killpoint.values.sentences import count

FAIL_FAST, BUDGET = "fail-fast", "budget"


class StopRule:
    """A campaign's stop condition. `after(cell)` is told each recorded cell (any thread);
    `due()` is asked by the campaign's main thread; `reason` is set once, when it fires."""

    def __init__(
        self, *, budget: float | None, fail_fast: bool, started: float | None = None
    ) -> None:
        self.budget = budget
        self.fail_fast = fail_fast
        self.started = time.monotonic() if started is None else started
        self.reason: str | None = None
        self.fired_at: float | None = None
        self._lock = threading.Lock()

    def _fire(self, reason: str) -> bool:
        with self._lock:
            if self.reason is not None:
                return False
            self.reason, self.fired_at = reason, time.monotonic() - self.started
            return True

    def after(self, cell: CellResult) -> bool:
        """Whether this cell stops the campaign (the first unexpected one, --fail-fast)."""
        return self.fail_fast and cell.failing and self._fire(FAIL_FAST)

    def due(self, now: float | None = None) -> bool:
        """Whether the campaign must stop now: it fired, or its budget is spent."""
        if self.reason is not None:
            return True
        if self.budget is None:
            return False
        spent = (time.monotonic() if now is None else now) - self.started
        return spent >= self.budget and (self._fire(BUDGET) or self.reason is not None)

    def left(self, now: float | None = None) -> float | None:
        """Seconds of the budget left (None: no budget)."""
        if self.budget is None:
            return None
        return self.budget - ((time.monotonic() if now is None else now) - self.started)


@dataclass
class RowCoverage:
    row: Row
    kinds: tuple[str, ...]  # the kinds planned in the row
    covered: tuple[str, ...]  # those of them that ran at least one cell
    cells: int  # planned
    ran: int
    planned: bool = True  # False: the campaign stopped before its baseline was done

    @property
    def whole(self) -> bool:
        return self.planned and set(self.kinds) <= set(self.covered)


@dataclass
class Stopped:
    """Why and when a campaign stopped before its plan was done, and what it covered."""

    reason: str  # FAIL_FAST, BUDGET, or what a caller's stop condition said
    seconds: float  # after the campaign began
    budget: float | None
    rows: list[RowCoverage] = field(default_factory=list)

    @property
    def ran(self) -> int:
        return sum(r.ran for r in self.rows)

    @property
    def planned(self) -> int:
        return sum(r.cells for r in self.rows)

    def sentence(self) -> str:
        if self.reason == FAIL_FAST:
            why = "it stopped at its first unexpected cell (--fail-fast)"
        elif self.reason == BUDGET:
            why = f"it stopped at its time budget ({duration(self.budget or 0)})"
        else:  # a stop condition of its caller's (Campaign's `stop`)
            why = f"it stopped early ({self.reason})"
        whole = sum(1 for r in self.rows if r.whole)
        return (
            f"{why}: {self.ran} of {count(self.planned, 'cell')} ran; every kind of point "
            f"planned ran in {whole} of {count(len(self.rows), 'row')}"
        )

    def partial_lines(self, limit: int) -> list[str]:
        """The rows not every kind of whose points ran, a line each, at most `limit` of
        them and then how many more."""
        partial = [r for r in self.rows if not r.whole]
        lines = []
        for r in partial[:limit]:
            where = f"{r.row[1]}/{r.row[2]}"
            if not r.planned:
                lines.append(f"{where}: its baseline did not finish; no cell planned")
            else:
                lines.append(
                    f"{where}: {r.ran} of {count(r.cells, 'cell')}, "
                    f"{len(r.covered)} of {count(len(r.kinds), 'kind')}"
                )
        if len(partial) > limit:
            lines.append(f"and {len(partial) - limit} more rows (the JSON's `stopped`)")
        return lines

    def to_json(self) -> dict[str, Any]:
        return {
            "reason": self.reason,
            "seconds": round(self.seconds, 3),
            "budget": self.budget,
            "ran": self.ran,
            "planned": self.planned,
            "rows": [
                {
                    "runtime": r.row[0],
                    "scenario": r.row[1],
                    "mode": r.row[2],
                    "store": r.row[3],
                    "cells": r.cells,
                    "ran": r.ran,
                    "planned": r.planned,
                    "kinds": list(r.kinds),
                    "covered": list(r.covered),
                }
                for r in self.rows
            ],
        }


def coverage(
    plan: Mapping[Row, Sequence[str] | None], cells: Iterable[CellResult]
) -> list[RowCoverage]:
    """Per planned row: its kinds and cells planned, and those that ran (a row whose cells
    were never planned counts no kind and no cell)."""
    ran: dict[Row, list[str]] = {}
    for c in cells:
        ran.setdefault((c.runtime, c.scenario, c.mode, c.store), []).append(c.schedule[0])
    rows = []
    for row, schedules in plan.items():
        planned = list(schedules or ())
        kinds = tuple(dict.fromkeys(_kind(s) for s in planned))
        done = ran.get(row, [])
        covered = tuple(k for k in kinds if k in {_kind(s) for s in done})
        rows.append(
            RowCoverage(row, kinds, covered, len(planned), len(done), schedules is not None)
        )
    return rows


def _kind(schedule: str) -> str:
    """`mid-batch:2:0+after-checkpoint:3` -> `mid-batch` (a schedule stands for its first
    point's kind)."""
    return schedule.split("+")[0].split(":")[0]


__all__ = ["BUDGET", "FAIL_FAST", "RowCoverage", "StopRule", "Stopped", "coverage"]
