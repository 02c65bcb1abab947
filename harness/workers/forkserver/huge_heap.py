"""Imported by the forkserver after the warm-up, when a campaign asked for it
(killpoint.workers.processes.use_huge_pages): its heap, as large as it gets before the
first fork, on huge pages (killpoint.workers.huge_pages)."""

from __future__ import annotations

from killpoint.workers.huge_pages import collapse_heap

collapse_heap()
