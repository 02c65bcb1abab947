"""Byte ranges: the parts of a file changed since its last sync.

Kept as sorted, disjoint, non-touching half-open intervals, so a file written a page
at a time by SQLite stays a handful of ranges however many writes it took.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterator

# "To the end of the file, whatever its size": a truncation changes every byte from
# the new length on (a file that shrinks and grows back reads zeros there).
END = 1 << 63


class Ranges:
    """A set of byte offsets, stored as disjoint [start, end) intervals."""

    __slots__ = ("_ends", "_starts")

    def __init__(self) -> None:
        self._starts: list[int] = []
        self._ends: list[int] = []

    def __repr__(self) -> str:
        return f"Ranges({list(self)!r})"

    def __iter__(self) -> Iterator[tuple[int, int]]:
        return zip(self._starts, self._ends, strict=True)

    def __bool__(self) -> bool:
        return bool(self._starts)

    def add(self, start: int, end: int) -> None:
        """Add [start, end), merging with every interval it overlaps or touches."""
        if end <= start:
            return
        # The first interval that ends at or after `start`, and the first that starts
        # after `end`: everything between them merges into one.
        lo = bisect.bisect_left(self._ends, start)
        hi = bisect.bisect_right(self._starts, end)
        if lo < hi:
            start = min(start, self._starts[lo])
            end = max(end, self._ends[hi - 1])
        self._starts[lo:hi] = [start]
        self._ends[lo:hi] = [end]

    def clear(self) -> None:
        self._starts.clear()
        self._ends.clear()

    def clipped(self, size: int) -> Iterator[tuple[int, int]]:
        """The intervals cut at `size` (the bytes that exist in a file of that size)."""
        for start, end in self:
            if start >= size:
                return
            yield start, min(end, size)

    def total(self, size: int) -> int:
        """How many of the offsets lie below `size`."""
        return sum(end - start for start, end in self.clipped(size))
