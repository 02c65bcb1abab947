"""store-restart:K on a server this module starts (and so can restart): the run finishes
correctly or fails without losing what it acknowledged, and a fresh worker continues it."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import LocalPostgres

REPO = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


def matrix(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> dict:
    result = subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "matrix", "--points", "restarts",
         "--workers", "1", "--timeout", "60", "--json", str(tmp_path / "m.json"),
         "--report", str(tmp_path / "m.html"), *args],
        cwd=REPO, capture_output=True, text=True, timeout=900, env={**os.environ, **(env or {})},
    )  # fmt: skip
    assert "Traceback" not in result.stderr, result.stderr
    return {"code": result.returncode, "out": result.stdout, "err": result.stderr,
            "document": json.loads((tmp_path / "m.json").read_text())}  # fmt: skip


@pytest.mark.postgres
def test_the_reference_runtime_survives_a_restart_at_every_checkpoint(
    own_pg: tuple[LocalPostgres, str], tmp_path: Path
) -> None:
    """Between transactions and inside a checkpoint's transaction: every cell expected."""
    local, url = own_pg
    done = matrix(
        tmp_path, "--scenarios", "research", "--modes", "tool-batch", "--store", url,
        env={"KILLPOINT_STORE_RESTART": local.restart_command()},
    )  # fmt: skip
    cells = done["document"]["cells"]
    points = [c["schedule"][0] for c in cells]
    between = [p for p in points if p.startswith("store-restart:")]
    inside = [p for p in points if p.startswith("store-restart-commit:")]
    assert [f"store-restart:{k}" for k in range(1, len(between) + 1)] == between
    assert len(between) >= 4 and len(inside) >= 4
    # Expected everywhere: `ok`, except the commit of checkpoint 1, whose failure loses
    # a run of which nothing had landed (an expected loss, as for a kill there).
    verdicts = {c["schedule"][0]: (c["verdict"], c["expected"]) for c in cells}
    assert ("lost", True) == verdicts.pop("store-restart-commit:1")
    assert {("ok", True)} == set(verdicts.values()), [
        (c["id"], c["verdict"], c["detail"]) for c in cells
    ]
    # Inside a transaction the COMMIT fails, the worker exits 1, a fresh worker continues.
    assert any([1, 0] == c["exit_codes"] for c in cells if "commit" in c["schedule"][0])
    # The worker met the restart: its connection died, and a fresh worker (or the same
    # one, reconnecting) took the run to the baseline's end.
    for c in cells:
        texts = [e[1] for e in c["timeline"]]
        assert any("store server restarts" in t for t in texts), texts
        assert any("up again" in t for t in texts), texts
    assert 0 == done["code"], done["err"]


def test_on_sqlite_the_cells_are_skipped_with_the_reason(tmp_path: Path) -> None:
    done = matrix(tmp_path, "--scenarios", "research", "--modes", "tool-batch")
    assert [] == done["document"]["cells"]
    assert (
        "store-restart, store-restart-commit points: store-restart needs a store server to "
        "restart" in done["out"]
    )


@pytest.mark.postgres
def test_a_server_killpoint_cannot_restart_is_named(pg_url: str, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "KILLPOINT_STORE_RESTART"}
    result = subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "matrix", "--points", "restarts",
         "--scenarios", "research", "--modes", "tool-batch", "--store", pg_url,
         "--json", str(tmp_path / "m.json"), "--report", str(tmp_path / "m.html")],
        cwd=REPO, capture_output=True, text=True, timeout=300, env=env,
    )  # fmt: skip
    assert [] == json.loads((tmp_path / "m.json").read_text())["cells"]
    assert "killpoint cannot restart a PostgreSQL server it did not start" in result.stdout
    assert "KILLPOINT_STORE_RESTART" in result.stdout


@pytest.mark.postgres
def test_a_server_that_loses_acknowledged_commits_on_restart_is_not_restarted(
    pg_url: str, tmp_path: Path
) -> None:
    """The session's server runs with synchronous_commit=off: a restart there would lose
    commits whatever the runtime does, so its cells say so and blame nothing."""
    done = matrix(
        tmp_path, "--scenarios", "research", "--modes", "tool-batch", "--points",
        "store-restart:1", "--store", pg_url, env={"KILLPOINT_STORE_RESTART": "false"},
    )  # fmt: skip
    cells = done["document"]["cells"]
    assert [("unavailable", True)] == [(c["verdict"], c["expected"]) for c in cells]
    assert "synchronous_commit=off" in cells[0]["detail"]
    assert 0 == done["code"], done["err"]
