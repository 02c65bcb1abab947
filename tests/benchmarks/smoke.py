"""Running a benchmark the way its docstring says (`python -m tests.benchmarks.NAME`), on
its smallest input, for the smoke tests that keep every benchmark working."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# A guard against a benchmark that never ends, not a measure: the smallest inputs take
# seconds, many more on a loaded machine.
LIMIT = 600


def run_benchmark(module: str, *args: str) -> str:
    """The benchmark's standard output; fails the test with its stderr when it exits
    non-zero."""
    done = subprocess.run(
        [sys.executable, "-m", f"tests.benchmarks.{module}", *args],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=LIMIT,
        check=False,
    )
    if done.returncode != 0:
        pytest.fail(
            f"python -m tests.benchmarks.{module} {' '.join(args)} exited {done.returncode}:\n"
            f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}",
            pytrace=False,
        )
    return done.stdout


def figure(output: str, label: str) -> float:
    """The first number on the line that starts with `label` (fails when there is none)."""
    for line in output.splitlines():
        if line.strip().startswith(label):
            found = re.search(r"[-+]?\d[\d,]*(?:\.\d+)?", line.strip()[len(label) :])
            if found:
                return float(found.group().replace(",", ""))
    pytest.fail(f"no figure for {label!r} in:\n{output}", pytrace=False)


def needs_fuse() -> None:
    """Skip (or, with KILLPOINT_REQUIRE_FUSE set, as in CI, fail) unless FUSE mounts here."""
    from tests.harness.powerloss.conftest import need_fuse

    need_fuse("power-loss benchmark")
