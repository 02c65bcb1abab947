"""No secret in any artefact of a PostgreSQL campaign: the store URL's password and a token
from the environment are in none of stdout, stderr, the JSON, the HTML, the kept folders
(keep=all: stores' logs, ledgers) or what `replay` prints."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

REPO = Path(__file__).resolve().parents[2]
PASSWORD = "pw-Kp7Xq2LmZ9"  # the session's server trusts any password: it is only carried
TOKEN = "tok-4fG8hJ1sQ0vW"

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def killpoint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(REPO), "SERVICE_API_TOKEN": TOKEN},
    )  # fmt: skip


def test_no_password_nor_token_in_any_artefact(pg_url: str, tmp_path: Path) -> None:
    url = make_url(pg_url).set(password=PASSWORD).render_as_string(hide_password=False)
    assert PASSWORD in url
    work = tmp_path / "work"
    result = killpoint(
        "matrix", "--scenarios", "research", "--modes", "tool-batch",
        "--points", "after-checkpoint:1,lock-held:1,model-500:1", "--keep", "all",
        "--store", url, "--work-dir", str(work),
        "--json", str(tmp_path / "m.json"), "--report", str(tmp_path / "m.html"),
        cwd=tmp_path,
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    document = json.loads((tmp_path / "m.json").read_text())
    assert 3 == len(document["cells"])
    artefacts = {"stdout": result.stdout, "stderr": result.stderr}
    for path in [tmp_path / "m.json", tmp_path / "m.html", *work.rglob("*")]:
        if path.is_file():
            artefacts[str(path)] = path.read_bytes().decode("utf-8", "replace")
    assert len(artefacts) > 6  # kept folders with their logs, ledgers, model state
    cell = document["cells"][0]
    replay = killpoint("replay", cell["id"], "--store", url, "--keep", "--work-dir", str(work),
                       cwd=tmp_path)  # fmt: skip
    assert 0 == replay.returncode, replay.stderr
    artefacts["replay stdout"] = replay.stdout
    artefacts["replay stderr"] = replay.stderr
    artefacts["replay commands"] = "\n".join(c["replay"] for c in document["cells"])
    assert url.replace(PASSWORD, "***") in document["command"] or "***" in document["command"]
    leaks = [name for name, text in artefacts.items() if PASSWORD in text or TOKEN in text]
    assert [] == leaks
