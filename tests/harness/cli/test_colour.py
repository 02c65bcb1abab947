"""Whether the command colours its output: --color, then NO_COLOR and FORCE_COLOR, then
whether the stream is a terminal; and the consoles built on that choice."""

from __future__ import annotations

import io
from collections.abc import Iterator

import pytest

from killpoint.cli import colour
from killpoint.cli import output as cli_output


@pytest.fixture(autouse=True)
def reset() -> Iterator[None]:
    yield
    colour.choose(None)


class TestChoice:
    @pytest.mark.parametrize(
        ("terminal", "environ", "flag", "expected"),
        [
            (True, {}, None, True),
            (False, {}, None, False),
            (True, {"NO_COLOR": "1"}, None, False),
            (True, {"NO_COLOR": ""}, None, True),  # no-color.org: only a non-empty value
            (False, {"FORCE_COLOR": "1"}, None, True),
            (False, {"NO_COLOR": "1", "FORCE_COLOR": "1"}, None, False),
            (False, {"NO_COLOR": "1"}, "always", True),
            (True, {"FORCE_COLOR": "1"}, "never", False),
            (True, {}, "auto", True),
        ],
    )
    def test_the_flag_then_the_environment_then_the_terminal(
        self, terminal: bool, environ: dict[str, str], flag: str | None, expected: bool
    ) -> None:
        """--color wins; NO_COLOR beats FORCE_COLOR; auto follows the terminal."""
        assert expected == colour.coloured(terminal, environ, flag)


class TestConsoles:
    def printed(self, monkeypatch: pytest.MonkeyPatch, flag: str | None, **env: str) -> str:
        for name in ("NO_COLOR", "FORCE_COLOR"):
            monkeypatch.delenv(name, raising=False)
        for name, value in env.items():
            monkeypatch.setenv(name, value)
        colour.choose(flag)
        buffer = io.StringIO()  # not a terminal
        cli_output.plain(cli_output.console(buffer), "3 unexpected", style="red")
        return buffer.getvalue()

    def test_always_colours_a_log_and_keeps_its_lines_whole(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """--color always sends the escape codes to a pipe, and the console stays as wide
        as for a log."""
        text = self.printed(monkeypatch, "always")
        assert text == "\x1b[31m3 unexpected\x1b[0m\n"
        colour.choose("always")
        assert cli_output.console(io.StringIO()).width == cli_output.WIDE

    def test_never_and_no_color_send_no_escape_code(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """--color never beats FORCE_COLOR; NO_COLOR and a pipe colour nothing."""
        assert self.printed(monkeypatch, "never", FORCE_COLOR="1") == "3 unexpected\n"
        assert self.printed(monkeypatch, None, NO_COLOR="1") == "3 unexpected\n"
        assert self.printed(monkeypatch, None) == "3 unexpected\n"

    def test_force_color_colours_a_log(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """FORCE_COLOR=1 colours a pipe (CI logs that render ANSI)."""
        assert "\x1b[31m" in self.printed(monkeypatch, None, FORCE_COLOR="1")
