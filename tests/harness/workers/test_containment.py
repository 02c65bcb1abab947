"""Every process a cell starts dies with the cell: a tool's child that calls setsid() or
stays in its worker's group, ignoring SIGTERM, does not outlive a passing campaign."""

# ruff: noqa: SIM300
from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import psutil
import pytest

from tests.harness.misbehaving_adapters import MARKER_ENV

REPO = Path(__file__).resolve().parents[3]
pytestmark = pytest.mark.slow


def marked(marker: str) -> list[psutil.Process]:
    """Live processes (zombies are not) with `marker` in their argv."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        if marker in (proc.info["cmdline"] or []) and proc.info["status"] != "zombie":
            found.append(proc)
    return found


def test_children_that_leave_their_worker_die_with_the_campaign(tmp_path: Path) -> None:
    """Each worker of a passing campaign starts two children that ignore SIGTERM (one
    calls setsid); once the command has exited, none is left, and nothing was printed
    about them."""
    marker = f"kp-left-{uuid.uuid4().hex}"
    try:
        done = subprocess.run(
            [sys.executable, "-m", "killpoint.cli.main", "matrix",
             "--runtime", "tests.harness.misbehaving_adapters:Leaving",
             "--scenarios", "research", "--modes", "tool-batch",
             "--points", "after-checkpoint:1,after-checkpoint:2", "--workers", "2",
             "--work-dir", str(tmp_path / "work"),
             "--json", str(tmp_path / "m.json"), "--report", str(tmp_path / "m.html")],
            cwd=REPO, env={**os.environ, MARKER_ENV: marker},
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert 0 == done.returncode, done.stderr
        cells = json.loads((tmp_path / "m.json").read_text())["cells"]
        assert {"ok"} == {c["verdict"] for c in cells}
        assert "unexpected pid" not in done.stderr
        assert [] == [(p.pid, p.info["cmdline"]) for p in marked(marker)]
    finally:
        for proc in marked(marker):
            with contextlib.suppress(psutil.Error):
                proc.kill()
