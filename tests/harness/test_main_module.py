# ruff: noqa: SIM300 - tests assert `expected == actual`
"""`python -m killpoint` (killpoint/__main__.py) is the `killpoint` command: the same output,
the same exit status."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def python_m(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "killpoint", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def test_python_m_killpoint_prints_the_version(tmp_path: Path) -> None:
    done = python_m("--version", cwd=tmp_path)
    assert 0 == done.returncode, done.stderr
    assert done.stdout.startswith("killpoint ")


def test_python_m_killpoint_lists_the_scenarios(tmp_path: Path) -> None:
    done = python_m("scenarios", cwd=tmp_path)
    assert 0 == done.returncode, done.stderr
    assert "research" in done.stdout


def test_python_m_killpoint_exits_with_the_commands_status(tmp_path: Path) -> None:
    """A usage error is exit 2, one line, as from the script."""
    done = python_m("matrix", "--no-such-option", cwd=tmp_path)
    assert 2 == done.returncode
    assert 1 == len(done.stderr.strip().splitlines()), done.stderr
    assert "No module named" not in done.stderr
