# ruff: noqa: SIM300 - tests assert `expected == actual`
"""`killpoint record` on the command line: a provider out of reach is named as such (not
blamed on the agent's client), in one line, with nothing written."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[3]


def free_port() -> int:
    """A port on which nothing listens: bound, read, closed."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
    return port


def test_a_provider_out_of_reach_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    """The agent's requests went through the proxy; the provider behind it refused the
    connection: the message names the provider's URL and what failed, not the client."""
    provider = f"http://127.0.0.1:{free_port()}/v1"
    out = tmp_path / "cassettes" / "y.json"
    env = {**os.environ, "OPENAI_API_KEY": "sk-x", "PYTHONPATH": str(REPO)}
    env.pop("OPENAI_BASE_URL", None)
    result = subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "record", "-q", "--runtime", "reference",
         "--scenario", "research", "--provider", provider, "--out", str(out)],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert 0 != result.returncode, result.stderr
    lines = result.stderr.strip().splitlines()
    assert 1 == len(lines), result.stderr
    assert lines[0].startswith(f"killpoint record: the provider at {provider} could not be reached")
    assert "ConnectError" in lines[0] and "check --provider and the network" in lines[0]
    assert "no request through the recording proxy" not in lines[0]
    assert "Traceback" not in result.stdout + result.stderr
    assert not out.exists()
