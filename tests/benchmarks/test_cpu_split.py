"""cpu_split runs on a small matrix and prints its parts, which account for the whole."""

from __future__ import annotations

import re

from tests.benchmarks.smoke import figure, run_benchmark


def test_it_splits_a_matrix_cpu_into_parts_that_add_up() -> None:
    out = run_benchmark(
        "cpu_split", "--scenarios", "research", "--modes", "tool", "--points", "after-checkpoint"
    )
    cells = figure(out, "cells")
    assert cells > 0
    per_cell = figure(out, "CPU per cell, ms")
    parts = {
        m.group(1): (float(m.group(2)), float(m.group(3)))
        for m in re.finditer(r"^\s+(\w+)\s+(-?[\d.]+) ms per cell\s+(-?[\d.]+)%$", out, re.M)
    }
    assert set(parts) == {"engine", "forkserver", "workers", "rest"}
    # Workers ran (the forkserver reaped them) and the engine did its share.
    assert parts["workers"][0] > 0 and parts["engine"][0] > 0 and parts["forkserver"][0] > 0
    assert abs(sum(ms for ms, _ in parts.values()) - per_cell) <= 0.5
    # The three measured parts are nearly all of it: the rest is within a few ticks.
    assert abs(parts["rest"][1]) < 15, out
