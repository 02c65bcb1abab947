"""The forkserver's heap on transparent huge pages, so that forking a worker and ending it
cost little whatever the heap's size.

A fork copies one page-table entry per mapped 4 KiB page of the parent (about 25,000 for
the warm forkserver's 100 MB), and the child's exit drops them again: 3-4 ms each way per
worker, measured. A 2 MiB huge page is one entry. The child's first write to a shared huge
page splits its own mapping and copies only the 4 KiB page it writes, as before, so what a
worker touches costs the same; what it does not touch (most of the heap) becomes nearly
free to inherit and to let go.

Best effort: a kernel without MADV_COLLAPSE (Linux < 6.1), transparent huge pages turned
off, or a refusal for lack of memory leaves the heap as it was, and nothing else changes.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os

HUGE = 2 << 20  # x86-64 and arm64 with 4 KiB base pages
MADV_HUGEPAGE = 14
MADV_COLLAPSE = 25


def anonymous_ranges(maps: str) -> list[tuple[int, int]]:
    """The 2 MiB-aligned parts of each private, writable, anonymous mapping (the heap and
    the arenas Python and malloc map) in a /proc/PID/maps text."""
    ranges = []
    for line in maps.splitlines():
        fields = line.split()
        if len(fields) < 5 or not fields[1].startswith("rw") or fields[1][3] != "p":
            continue
        path = fields[5] if len(fields) > 5 else ""
        if path not in ("", "[heap]"):
            continue
        low, high = (int(x, 16) for x in fields[0].split("-"))
        start, end = -(-low // HUGE) * HUGE, high // HUGE * HUGE
        if end > start:
            ranges.append((start, end))
    return ranges


def collapse_heap() -> int:
    """Back this process's anonymous memory with huge pages where the kernel allows;
    returns how many bytes it was asked to collapse (0 where it cannot)."""
    if os.uname().sysname != "Linux":
        return 0
    try:
        with open(f"/proc/{os.getpid()}/maps") as f:
            maps = f.read()
        libc = ctypes.CDLL(None, use_errno=True)
    except OSError:
        return 0
    madvise = libc.madvise
    madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
    madvise.restype = ctypes.c_int
    asked = 0
    for start, end in anonymous_ranges(maps):
        # MADV_HUGEPAGE first: under the "madvise" setting khugepaged keeps them huge.
        if madvise(start, end - start, MADV_HUGEPAGE) != 0:
            continue
        if madvise(start, end - start, MADV_COLLAPSE) == 0:
            asked += end - start
    return asked


__all__ = ["anonymous_ranges", "collapse_heap"]
