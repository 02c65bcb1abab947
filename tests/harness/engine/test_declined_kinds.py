"""An adapter declines a point kind that does not apply to its runtime (a runtime that waits
on a held lock by design declines `lock-held`): its points are skipped with the reason, in
the JSON, on the terminal and in the report, and the rest of the row runs."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.harness.declining_runtimes import WHY

REPO = Path(__file__).resolve().parents[3]
RUNTIME = "tests.harness.declining_runtimes"

pytestmark = pytest.mark.slow


def matrix(tmp_path: Path, runtime: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "matrix", "--runtime", runtime,
         "--scenarios", "research", "--modes", "tool-batch",
         "--points", "lock-held,after-checkpoint:1", "--timeout", "20",
         "--json", str(tmp_path / "m.json"), "--report", str(tmp_path / "m.html"),
         "--work-dir", str(tmp_path), "--keep", "none"],
        cwd=REPO, capture_output=True, text=True, timeout=300, env=dict(os.environ),
    )  # fmt: skip


def test_a_declined_kind_is_skipped_with_its_reason(tmp_path: Path) -> None:
    result = matrix(tmp_path, f"{RUNTIME}:patient")
    assert 0 == result.returncode, result.stdout + result.stderr
    document = json.loads((tmp_path / "m.json").read_text())
    row = f"{RUNTIME}:patient/research/tool-batch/sqlite"
    assert [f"{row}/after-checkpoint:1"] == [c["id"] for c in document["cells"]]
    reason = f"lock-held points: runtime '{RUNTIME}:patient' declines them: {WHY}"
    assert [("research", "tool-batch", reason)] == [
        (s["scenario"], s["mode"], s["reason"]) for s in document["skipped"]
    ]
    assert f"skipped research/tool-batch: {reason}" in result.stdout.splitlines()
    page = (tmp_path / "m.html").read_text()
    assert WHY in page


def test_declining_a_kind_that_does_not_exist_is_bad_input(tmp_path: Path) -> None:
    result = matrix(tmp_path, f"{RUNTIME}:misspelt")
    assert 2 == result.returncode, result.stdout + result.stderr
    assert 1 == len(result.stderr.strip().splitlines()), result.stderr
    assert "declined_kinds names unknown point kind lock-hold; choose from" in result.stderr
    assert not (tmp_path / "m.json").exists()


def test_a_row_on_a_store_the_adapter_does_not_declare_is_skipped_with_the_reason(
    tmp_path: Path, pg_url: str
) -> None:
    """An adapter that stores on SQLite only says so (`stores`): under a PostgreSQL store its
    rows are skipped naming the store and what it supports, on the terminal, in the JSON
    and in the report, never failed (its driver would raise on the URL)."""
    runtime = f"{RUNTIME}:sqlite_only"
    result = subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "matrix", "--runtime", runtime,
         "--scenarios", "research", "--modes", "tool-batch", "--points", "boundaries",
         "--store", pg_url, "--timeout", "20",
         "--json", str(tmp_path / "m.json"), "--report", str(tmp_path / "m.html"),
         "--work-dir", str(tmp_path), "--keep", "none"],
        cwd=REPO, capture_output=True, text=True, timeout=300, env=dict(os.environ),
    )  # fmt: skip
    # Every row skipped: no cell ran, which is exit 5 whatever the reason (exit-codes.md).
    assert 5 == result.returncode, result.stdout + result.stderr
    reason = (
        f"runtime {runtime!r} does not run on a postgresql store: its adapter supports "
        "sqlite only (its `stores`)"
    )
    document = json.loads((tmp_path / "m.json").read_text())
    assert [] == document["cells"]
    assert [("research", "tool-batch", reason)] == [
        (s["scenario"], s["mode"], s["reason"]) for s in document["skipped"]
    ]
    assert f"skipped research/tool-batch: {reason}" in result.stdout.splitlines()
    assert "adapter-error" not in result.stdout + result.stderr
    assert f"  {reason} (research/tool-batch)" in result.stderr.splitlines()
    page = (tmp_path / "m.html").read_text()
    assert "does not run on a postgresql store" in page
