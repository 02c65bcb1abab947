"""The engine gives free heap pages back between cells, at most once per interval."""

from __future__ import annotations

import psutil
import pytest

from killpoint.engine.heap_trim import HeapTrimmer


def rss() -> int:
    return int(psutil.Process().memory_info().rss)


def test_it_trims_at_most_once_per_interval() -> None:
    trimmer = HeapTrimmer(interval=3600)
    for _ in range(100):
        trimmer.maybe_trim()
    assert trimmer.trims == 0
    trimmer.interval = 0
    trimmer.maybe_trim()
    assert trimmer.trims == (1 if trimmer.available else 0)


@pytest.mark.skipif(not HeapTrimmer().available, reason="no glibc malloc_trim here")
def test_free_pages_pinned_below_a_live_chunk_go_back_to_the_system() -> None:
    """The engine's case: large transient strings freed while a later small allocation
    still lives above them; glibc keeps their pages until trimmed."""
    chunk = 100 * 1024  # under glibc's mmap threshold: from the heap, not an mmap
    held = [bytes(chunk) for _ in range(600)]  # about 60 MB, each page touched
    pins = held[::60]  # a few live chunks spread through the heap keep it from shrinking
    del held
    before = rss()
    trimmer = HeapTrimmer(interval=0)
    trimmer.maybe_trim()
    after = rss()
    assert before - after > 20 * 1024 * 1024, (before, after)
    assert len(pins) == 10
