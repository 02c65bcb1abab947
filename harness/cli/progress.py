"""Progress of a campaign on standard error: rich's live bar on a terminal, and without
one (every CI log) plain lines, one each time a tenth of the planned cells has finished
or ten seconds have passed since the last line, whichever comes first, with the counts
and an estimate of the time left.

The decision is taken when a cell finishes (a campaign reports nothing else between its
plan and its end), from a clock the caller may replace: the tests count lines against a
clock they move by hand, never against the time a machine happens to take.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from killpoint.cli import output as cli_output
from killpoint.cli import verbosity
from killpoint.values.durations import duration
from killpoint.values.sentences import count

if TYPE_CHECKING:
    from rich.console import Console

    from killpoint.engine.campaign import Campaign, CampaignResult

EVERY_SECONDS = 10.0
LINES_PER_CAMPAIGN = 10  # a line per tenth of the cells, at least


class LineProgress:
    """Progress as lines: `say` gets each line; `clock` is time.monotonic by default."""

    def __init__(
        self,
        say: Callable[[str], None],
        *,
        clock: Callable[[], float] = time.monotonic,
        every_seconds: float = EVERY_SECONDS,
        each_cell: bool = False,
    ) -> None:
        self.say = say
        self.clock = clock
        self.every_seconds = every_seconds
        self.each_cell = each_cell
        self.total = 0
        self.done = 0
        self.unexpected = 0
        self.every_cells = 1
        self.started = self.last_time = clock()
        self.last_done = 0

    def baselines(self) -> None:
        self.say("killpoint: running the baselines (each row's uninterrupted run, twice)")

    def planned(self, total: int) -> None:
        self.total = total
        self.every_cells = max(1, math.ceil(total / LINES_PER_CAMPAIGN))
        # The time goes on from the campaign's start: a row's cells start as its baseline
        # ends, so cells finish before the whole plan is known, and the baselines' time is
        # the campaign's too ("1 ms elapsed, about 6 ms left" after half a minute).
        self.last_time = self.clock()
        self.last_done = 0
        self.say(f"killpoint: {count(total, 'cell')} planned")

    def cell(self, result: Any) -> None:
        self.done += 1
        self.unexpected += bool(result.failing)
        if self.each_cell:
            state = "expected" if result.expected else "UNEXPECTED"
            self.say(f"killpoint: {result.id}: {result.verdict} ({state})")
        now = self.clock()
        due = (
            self.done == self.total
            or self.done - self.last_done >= self.every_cells
            or now - self.last_time >= self.every_seconds
        )
        if due:
            self.last_time, self.last_done = now, self.done
            self.say(self.line(now))

    def line(self, now: float) -> str:
        elapsed = now - self.started
        share = f" ({100 * self.done // self.total}%)" if self.total else ""
        text = (
            f"killpoint: {self.done}/{count(self.total, 'cell')}{share}, {self.unexpected} unexpected, "
            f"{duration(elapsed)} elapsed"
        )
        left = self.total - self.done
        if left > 0 and self.done:
            text += f", about {duration(elapsed / self.done * left)} left"
        return text


def with_progress(camp: Campaign, err: Console, **run: Any) -> CampaignResult:
    """Run the campaign, showing its progress as the stream and the verbosity ask."""
    if verbosity.quiet():
        return camp.run(**run)
    if not cli_output.is_terminal(err.file):
        lines = LineProgress(lambda t: cli_output.plain(err, t), each_cell=verbosity.verbose())
        lines.baselines()
        return camp.run(on_planned=lines.planned, on_cell=lines.cell, **run)
    return _live(camp, err, **run)


def _live(camp: Campaign, err: Console, **run: Any) -> CampaignResult:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[bad]} unexpected"),
        TimeElapsedColumn(),
        console=err,
        transient=False,
    ) as progress:
        task = progress.add_task("baselines", total=None, bad=0)
        bad = 0

        def planned(n: int) -> None:
            progress.update(task, description="cells", total=n, completed=0)

        def cell_done(r: Any) -> None:
            nonlocal bad
            bad += 1 if r.failing else 0
            progress.update(task, advance=1, bad=bad)
            if verbosity.verbose():
                state = "expected" if r.expected else "UNEXPECTED"
                cli_output.plain(progress.console, f"{r.id}: {r.verdict} ({state})")

        return camp.run(on_planned=planned, on_cell=cell_done, **run)


__all__ = ["LineProgress", "duration", "with_progress"]
