"""`check-adapter`'s last line names the matrix of the runtime it checked."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from sqlalchemy.engine import make_url

from killpoint.cli.check import next_command, store_note
from killpoint.redaction import redact, remember_url


class TestNextCommand:
    def test_the_same_runtime_and_store(self) -> None:
        """A bare `killpoint matrix` would test the reference runtime instead."""
        assert (
            next_command("pkg.adapters:mine", "sqlite")
            == "killpoint matrix --runtime pkg.adapters:mine"
        )

    def test_a_url_with_a_password_is_named_by_the_variable_replay_lines_use(self) -> None:
        """Written out masked, pasted, it would send the password `***`."""
        url = "postgresql+psycopg://kp:pa55-w0rd-x@db/kp"
        remember_url(url)
        assert (
            redact(next_command("agno", url))
            == 'killpoint matrix --runtime agno --store "$KILLPOINT_STORE"'
        )

    def test_a_url_without_a_password_is_written_out(self) -> None:
        url = "postgresql+psycopg://kp@db:5432/kp"
        assert next_command("agno", url) == f"killpoint matrix --runtime agno --store {url}"
        assert store_note(url) == ""

    def test_the_variable_is_explained_unless_it_holds_the_url(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        url = "postgresql+psycopg://kp:pa55-w0rd-x@db/kp"
        monkeypatch.delenv("KILLPOINT_STORE", raising=False)
        assert store_note(url) == ", with KILLPOINT_STORE set to the store's URL"
        monkeypatch.setenv("KILLPOINT_STORE", url)
        assert store_note(url) == ""
        assert store_note("sqlite") == ""

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


@pytest.mark.slow
@pytest.mark.postgres
def test_the_success_line_on_a_server_with_a_password_runs_as_pasted(pg_url: str) -> None:
    """The URL given through KILLPOINT_STORE, as docs/how-to/postgresql.md has it: the
    command to run next names it the same way, never masked (`***` would be sent as the
    password)."""
    url = make_url(pg_url).set(password="pa55-w0rd-x").render_as_string(hide_password=False)
    result = subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "check-adapter", "--runtime", "reference",
         "--store", url],
        capture_output=True, text=True, timeout=240, env={**os.environ, "KILLPOINT_STORE": url},
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        result.stdout.splitlines()[-1]
        == 'every check passed: run `killpoint matrix --runtime reference --store "$KILLPOINT_STORE"`'
    )
