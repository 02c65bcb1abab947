"""against_rev runs on its smallest input (HEAD against this tree, two rounds) and prints
its figures."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from tests.benchmarks.smoke import REPO, figure, run_benchmark


def test_it_prints_a_revision_beside_this_tree() -> None:
    if shutil.which("git") is None or not (REPO / ".git").exists():
        pytest.skip("against_rev exports a revision with git: this is not a git checkout")
    head = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    out = run_benchmark(
        "against_rev",
        "HEAD",
        *("--scenarios", "research", "--points", "after-checkpoint", "--workers", "2"),
        *("--rounds", "2"),
    )
    header = next(line for line in out.splitlines() if "this tree" in line)
    assert header.index(head) < header.index("this tree")
    rows = {line[:28].strip(): line[28:].split() for line in out.splitlines()}
    counts = [int(v) for v in rows["cells (unexpected)"][::2]]
    assert counts[0] == counts[1] > 0  # one plan, both sides
    assert all(float(v) > 0 for v in rows["cells per second"])
    assert all(float(v) > 0 for v in rows["CPU per cell, ms"])
    assert rows["after-checkpoint"][1] == f"({counts[0]})"
    assert figure(out, f"this tree / {head} cells per second") > 0
    (by_round,) = [line for line in out.splitlines() if line.strip().startswith("by round:")]
    assert len(by_round.split(":", 1)[1].split(",")) == 2
    assert figure(out, f"this tree / {head} CPU per cell") > 0
    (cpu_rounds,) = [x for x in out.splitlines() if x.strip().startswith("CPU by round:")]
    assert len(cpu_rounds.split(":", 1)[1].split(",")) == 2
