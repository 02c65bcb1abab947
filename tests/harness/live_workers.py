"""Test helpers: the worker processes a cell started, and whether any outlived it."""

# ruff: noqa: SIM300
from __future__ import annotations

import re

import psutil

from killpoint.values.cell import CellResult


def worker_pids(results: list[CellResult]) -> list[int]:
    """Every worker pid the cells' timelines name."""
    return [
        int(m.group(1))
        for r in results
        for event in r.timeline
        if event.kind == "start" and (m := re.search(r"\(pid (\d+)\)", event.text))
    ]


def assert_no_worker_alive(pids: list[int]) -> None:
    alive = []
    for pid in pids:
        try:
            if psutil.Process(pid).status() != psutil.STATUS_ZOMBIE:
                alive.append(pid)
        except psutil.NoSuchProcess:
            continue
    assert [] == alive
