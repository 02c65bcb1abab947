"""Ranges: the byte ranges of a file changed since its last sync."""

# ruff: noqa: SIM300

from __future__ import annotations

from killpoint.powerloss.ranges import END, Ranges


def ranges(*pairs: tuple[int, int]) -> Ranges:
    r = Ranges()
    for start, end in pairs:
        r.add(start, end)
    return r


class TestAdd:
    def test_overlapping_and_touching_ranges_merge(self) -> None:
        """Writes that overlap or touch become one range; a gap keeps two."""
        assert [(0, 30), (40, 50)] == list(ranges((0, 10), (10, 20), (15, 30), (40, 50)))

    def test_a_range_spanning_several_swallows_them(self) -> None:
        """A write over several earlier ranges leaves one."""
        assert [(0, 100)] == list(ranges((10, 20), (30, 40), (50, 60), (0, 100)))

    def test_empty_ranges_are_ignored(self) -> None:
        """A zero-length write changes nothing."""
        assert [] == list(ranges((5, 5)))

    def test_out_of_order_adds_stay_sorted(self) -> None:
        """Ranges come back in file order whatever order they were written in."""
        assert [(0, 1), (5, 6), (9, 10)] == list(ranges((9, 10), (0, 1), (5, 6)))


class TestClipped:
    def test_clip_at_the_file_size(self) -> None:
        """Only the bytes below the size exist; a truncation's open end is cut there."""
        r = ranges((0, 10), (20, END))
        assert [(0, 10), (20, 25)] == list(r.clipped(25))
        assert 15 == r.total(25)
        assert [(0, 5)] == list(r.clipped(5))
