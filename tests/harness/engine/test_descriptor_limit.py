"""The engine holds no descriptor beyond its cells' own: a campaign of about sixty cells
finishes under a low open-files limit (the limit a stale store connection per cell would
exhaust within a few dozen cells)."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
import resource
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
LIMIT = 64  # descriptors per process: the engine, the forkserver and every worker

pytestmark = pytest.mark.slow


def low_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))


def test_sixty_cells_under_a_low_descriptor_limit(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "matrix", "--scenarios", "research,parallel-fetch",
         "--modes", "tool-batch", "--points", "all", "--workers", "2",
         "--json", str(tmp_path / "m.json"), "--report", str(tmp_path / "m.html")],
        cwd=REPO, capture_output=True, text=True, timeout=600, preexec_fn=low_limit,
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    assert "Too many open files" not in result.stderr + result.stdout
    cells = json.loads((tmp_path / "m.json").read_text())["cells"]
    assert len(cells) >= 60
    errors = [(c["id"], c["detail"]) for c in cells if c["verdict"] in ("error", "missed")]
    assert [] == errors
