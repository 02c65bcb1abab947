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
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from killpoint.values.cell import CellResult, Row
from killpoint.values.durations import duration
from killpoint.values.input_files import read_int
from killpoint.values.sentences import count, verb

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
    # Its baseline failed: no crash cell was planned (its one cell carries the failure,
    # without a crash), so no kind of point is planned in it and it is never covered.
    baseline_failed: bool = False

    @property
    def whole(self) -> bool:
        return self.planned and not self.baseline_failed and set(self.kinds) <= set(self.covered)


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

    def why(self) -> str:
        """Why it stopped, as a clause ("stopped at its time budget (5 min 0 s)"): the start
        of `sentence`, and what other outputs say of the cells it did not run."""
        if self.reason == FAIL_FAST:
            return "stopped at its first unexpected cell (--fail-fast)"
        if self.reason == BUDGET:
            return f"stopped at its time budget ({duration(self.budget or 0)})"
        return f"stopped early ({self.reason})"  # a caller's stop condition (Campaign's `stop`)

    def sentence(self) -> str:
        why = f"it {self.why()}"
        whole = sum(1 for r in self.rows if r.whole)
        failed = sum(1 for r in self.rows if r.baseline_failed)
        text = f"{why}: {self.ran} of {count(self.planned, 'cell')} ran"
        # A row whose baseline failed had no kind of point planned: counted as covered, it
        # would read as crashed at every kind; it is said apart, as not planned.
        if not self.rows or failed < len(self.rows):  # unless every row's baseline failed
            text += (
                f"; every kind of point planned ran in {whole} of "
                f"{count(len(self.rows) - failed, 'row')}"
            )
        if failed:
            whose = verb(failed, "its baseline", "their baselines")
            text += f"; {count(failed, 'row')} not planned: {whose} failed"
        return text

    def partial_lines(self, limit: int) -> list[str]:
        """The rows not every kind of whose points ran, a line each, at most `limit` of
        them and then how many more."""
        partial = [r for r in self.rows if not r.whole]
        lines = []
        for r in partial[:limit]:
            where = f"{r.row[1]}/{r.row[2]}"
            if not r.planned:
                lines.append(f"{where}: its baseline did not finish; no cell planned")
            elif r.baseline_failed:
                lines.append(
                    f"{where}: its baseline failed; no crash cell planned"
                    + ("" if r.ran else ", and the cell that carries its failure did not run")
                )
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
                    "baseline_failed": r.baseline_failed,
                    "kinds": list(r.kinds),
                    "covered": list(r.covered),
                }
                for r in self.rows
            ],
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Stopped:
        """A stop as a report keeps it (`to_json`), so that every output of the report says
        it from these methods, as the campaign's own terminal does. A field missing or of
        another type (an older or a hand-made report) reads as nothing of it."""

        def texts(value: Any) -> tuple[str, ...]:
            return tuple(str(v) for v in value) if isinstance(value, list) else ()

        rows = [
            RowCoverage(
                row=_row(r),
                kinds=texts(r.get("kinds")),
                covered=texts(r.get("covered")),
                cells=read_int(r.get("cells")) or 0,
                ran=read_int(r.get("ran")) or 0,
                planned=r.get("planned") is not False,
                baseline_failed=r.get("baseline_failed") is True,
            )
            for r in data.get("rows") or []
            if isinstance(r, Mapping)
        ]
        seconds, budget = data.get("seconds"), data.get("budget")
        return cls(
            reason=str(data.get("reason", "")),
            seconds=float(seconds) if isinstance(seconds, int | float) else 0.0,
            budget=float(budget) if isinstance(budget, int | float) else None,
            rows=rows,
        )


def _row(data: Mapping[str, Any]) -> Row:
    """A row as `Stopped.to_json` writes it."""
    runtime, scenario, mode, store = (
        str(data.get(k, "")) for k in ("runtime", "scenario", "mode", "store")
    )
    return runtime, scenario, mode, store


def coverage(
    plan: Mapping[Row, Sequence[str] | None],
    cells: Iterable[CellResult],
    not_planned: Collection[Row] = (),
) -> list[RowCoverage]:
    """Per planned row: its kinds and cells planned, and those that ran (a row whose cells
    were never planned counts no kind and no cell). `not_planned`: the rows whose baseline
    failed (CampaignResult.not_planned); the one cell each has stands at a point that is no
    kind planned (it makes no crash), so such a row counts no kind either."""
    ran: dict[Row, list[str]] = {}
    for c in cells:
        ran.setdefault((c.runtime, c.scenario, c.mode, c.store), []).append(c.schedule[0])
    rows = []
    for row, schedules in plan.items():
        planned = list(schedules or ())
        failed = row in not_planned
        kinds = () if failed else tuple(dict.fromkeys(_kind(s) for s in planned))
        done = ran.get(row, [])
        covered = tuple(k for k in kinds if k in {_kind(s) for s in done})
        rows.append(
            RowCoverage(row, kinds, covered, len(planned), len(done), schedules is not None, failed)
        )
    return rows


def _kind(schedule: str) -> str:
    """`mid-batch:2:0+after-checkpoint:3` -> `mid-batch` (a schedule stands for its first
    point's kind)."""
    return schedule.split("+")[0].split(":")[0]


__all__ = ["BUDGET", "FAIL_FAST", "RowCoverage", "StopRule", "Stopped", "coverage"]
