"""`check-adapter`'s last line names the matrix of the runtime it checked."""

from __future__ import annotations

import subprocess
import sys

import pytest

from killpoint.cli.check import next_command
from killpoint.redaction import redact, remember_url


class TestNextCommand:
    def test_the_same_runtime_and_store(self) -> None:
        """A bare `killpoint matrix` would test the reference runtime instead."""
        assert (
            next_command("pkg.adapters:mine", "sqlite")
            == "killpoint matrix --runtime pkg.adapters:mine"
        )
        url = "postgresql+psycopg://kp:pa55-w0rd-x@db/kp"
        remember_url(url)
        shown = redact(next_command("agno", url))
        assert shown == "killpoint matrix --runtime agno --store postgresql+psycopg://kp:***@db/kp"

    @pytest.mark.slow
    def test_the_success_line_of_a_real_check(self) -> None:
        """A real check-adapter run: its last line is the command to run next."""
        result = subprocess.run(
            [sys.executable, "-m", "killpoint.cli.main", "check-adapter",
             "--runtime", "killpoint.adapters.reference:transcript"],
            capture_output=True, text=True, timeout=240,
        )  # fmt: skip
        assert result.returncode == 0, result.stdout + result.stderr
        assert (
            result.stdout.splitlines()[-1]
            == "every check passed: run `killpoint matrix --runtime killpoint.adapters.reference:transcript`"
        )
