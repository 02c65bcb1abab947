"""Progress lines without a terminal, counted against a clock the test moves by hand."""

from __future__ import annotations

from dataclasses import dataclass

from killpoint.cli.progress import LineProgress
from killpoint.values.durations import duration


@dataclass
class Done:
    id: str
    failing: bool = False
    verdict: str = "ok"

    @property
    def expected(self) -> bool:
        return not self.failing


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def progress(clock: Clock, *, each_cell: bool = False) -> tuple[LineProgress, list[str]]:
    lines: list[str] = []
    return LineProgress(lines.append, clock=clock, each_cell=each_cell), lines


class TestLines:
    def test_a_line_per_tenth_of_the_cells_when_no_time_passes(self) -> None:
        """100 cells and a clock that stands still: the plan, then a line every 10 cells."""
        clock = Clock()
        lines_of, lines = progress(clock)
        lines_of.planned(100)
        for n in range(100):
            lines_of.cell(Done(f"c{n}", failing=n < 3))
        assert lines[0] == "killpoint: 100 cells planned"
        assert len(lines) == 11
        assert lines[1].startswith("killpoint: 10/100 cells (10%), 3 unexpected, 0 ms elapsed")
        assert lines[-1] == "killpoint: 100/100 cells (100%), 3 unexpected, 0 ms elapsed"

    def test_a_line_every_ten_seconds_between_the_tenths(self) -> None:
        """1,000 cells, 4 s each: a line at every tenth (100 cells) would come every 400 s;
        the 10 s rule gives one every third cell instead, with the estimate of what is left."""
        clock = Clock()
        lines_of, lines = progress(clock)
        lines_of.planned(1000)
        for n in range(9):
            clock.now += 4
            lines_of.cell(Done(f"c{n}"))
        assert [line.split()[1] if "/" in line else "planned" for line in lines] == [
            "planned",
            "3/1000",
            "6/1000",
            "9/1000",
        ]
        # 12 s for 3 cells: 997 left take about 3988 s.
        assert lines[1].endswith(
            "3/1000 cells (0%), 0 unexpected, 12.0 s elapsed, about 1 h 6 min left"
        )

    def test_the_time_counts_from_the_campaigns_start(self) -> None:
        """30 s of baselines, during which 12 cells finished as their rows' baselines
        ended; they are told once the plan is: "1 ms elapsed, about 6 ms left" left out
        the half minute, and its estimate with it."""
        clock = Clock()
        lines_of, lines = progress(clock)
        clock.now += 30
        lines_of.planned(120)
        for n in range(12):
            lines_of.cell(Done(f"c{n}"))
        assert lines[-1] == (
            "killpoint: 12/120 cells (10%), 0 unexpected, 30.0 s elapsed, about 4 min 30 s left"
        ), lines

    def test_the_last_cell_always_gets_its_line(self) -> None:
        """The end is said, without an estimate."""
        clock = Clock()
        lines_of, lines = progress(clock)
        lines_of.planned(3)
        for n in range(3):
            lines_of.cell(Done(f"c{n}"))
        assert lines[-1].startswith("killpoint: 3/3 cells (100%)")
        assert "left" not in lines[-1]

    def test_verbose_adds_a_line_per_cell_with_its_verdict(self) -> None:
        """--verbose: each finished cell, besides the counts."""
        clock = Clock()
        lines_of, lines = progress(clock, each_cell=True)
        lines_of.planned(20)
        lines_of.cell(Done("reference/research/runs/sqlite/mid-model:1", True, "lost"))
        assert (
            lines[1] == "killpoint: reference/research/runs/sqlite/mid-model:1: lost (UNEXPECTED)"
        )
        assert len(lines) == 2  # the count line waits for the second tenth


class TestDuration:
    def test_seconds_minutes_hours(self) -> None:
        """The one time format (killpoint.values.durations), as every output has it."""
        assert [duration(0.2), duration(59), duration(60)] == ["200 ms", "59.0 s", "1 min 0 s"]
        assert duration(2 * 3600 + 600 + 5) == "2 h 10 min"
        assert duration(185) == "3 min 5 s"
