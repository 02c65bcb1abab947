"""The options every command takes: --version, --quiet, --verbose, --color."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from killpoint.cli.main import build_parser
from killpoint.cli.version import version_line


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """Every command, nested ones (`corpus record`) too, by its name."""
    found: dict[str, argparse.ArgumentParser] = {}
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                found[name] = sub
                found.update({f"{name} {k}": v for k, v in subparsers(sub).items()})
    return found


def commands() -> list[str]:
    return sorted(name for name in subparsers(build_parser()) if " " not in name)


class TestEveryCommand:
    @pytest.mark.parametrize("command", sorted(subparsers(build_parser())))
    def test_each_takes_the_common_options(self, command: str) -> None:
        """Every command and nested command: --version, -q/--quiet, -v/--verbose, --color."""
        sub = subparsers(build_parser())[command]
        flags = {flag for action in sub._actions for flag in action.option_strings}
        assert {"--version", "-q", "--quiet", "-v", "--verbose", "--color"} <= flags

    def test_they_parse_after_the_command(self) -> None:
        """`killpoint scenarios --quiet --color never`, `-vv` counted."""
        args = build_parser().parse_args(["scenarios", "--quiet", "--color", "never"])
        assert (args.quiet, args.color) == (True, "never")
        assert build_parser().parse_args(["scenarios", "-vv"]).verbose == 2

    @pytest.mark.parametrize("command", ["", *commands()])
    def test_version_prints_one_line_and_exits_0(self, command: str) -> None:
        """A real process: `killpoint --version`, `killpoint replay --version`, ...,
        even where the command's required arguments are missing."""
        result = subprocess.run(
            [sys.executable, "-m", "killpoint.cli.main", *([command] if command else []), "--version"],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        assert [version_line()] == result.stdout.splitlines()

    def test_quiet_and_verbose_exclude_each_other(self) -> None:
        """Usage error (exit 2)."""
        with pytest.raises(SystemExit) as caught:
            build_parser().parse_args(["scenarios", "-q", "-v"])
        assert caught.value.code == 2

    def test_a_nested_command_keeps_what_was_given_before_it(self) -> None:
        """`corpus -q record`: the nested parser's own (absent) default does not undo -q."""
        args = build_parser().parse_args(["corpus", "-q", "record", "--out", "x"])
        assert args.quiet


class TestVersion:
    def test_names_killpoint_python_and_the_libraries(self) -> None:
        """From the installed distributions' metadata."""
        import platform
        from importlib import metadata

        line = version_line()
        assert line.startswith(
            f"killpoint {metadata.version('killpoint')} (Python {platform.python_version()}; "
        )
        assert f"SQLAlchemy {metadata.version('SQLAlchemy')}" in line
        assert f"openai {metadata.version('openai')}" in line
