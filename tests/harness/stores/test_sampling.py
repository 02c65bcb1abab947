"""Moments of trouble, remembered as spans, and asked about per cell."""

# ruff: noqa: SIM300
from __future__ import annotations

from killpoint.stores.sampling import Spans


def test_a_span_is_seen_by_the_cells_it_overlaps_only() -> None:
    spans = Spans()
    spans.mark(10.0, 12.0, "refused")
    assert "refused" == spans.during(11.0, 20.0)
    assert "refused" == spans.during(0.0, 10.0)
    assert spans.during(12.5, 20.0) is None
    assert spans.during(0.0, 9.0) is None


def test_touching_spans_merge_and_keep_the_lowest_free_space() -> None:
    spans = Spans()
    spans.mark(1.0, 2.0, 4096)
    spans.mark(2.0, 3.0, 1024)
    spans.mark(2.5, 4.0, 8192)
    assert 1024 == spans.during(3.5, 3.6)
