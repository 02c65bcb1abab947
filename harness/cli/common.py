"""The options every `killpoint` command takes (`--version`, `--quiet`, `--verbose`,
`--color`), as one argparse parent, and how they take effect before a command runs."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from killpoint.cli import colour, verbosity


class VersionAction(argparse.Action):
    """`--version`: the line, on stdout, exit 0; computed only when asked for."""

    def __init__(self, option_strings: Sequence[str], dest: str, **kwargs: Any) -> None:
        kwargs.setdefault("help", "print killpoint's, Python's and the libraries' versions")
        kwargs["default"] = argparse.SUPPRESS
        super().__init__(option_strings, dest, nargs=0, **kwargs)

    def __call__(self, parser: argparse.ArgumentParser, *args: Any, **kwargs: Any) -> None:
        from killpoint.cli.version import version_line

        sys.stdout.write(version_line() + "\n")
        parser.exit(0)


def parent() -> argparse.ArgumentParser:
    """Added to every subcommand (`killpoint matrix --quiet`, `killpoint replay --version`)."""
    # No defaults (SUPPRESS): a nested command (`corpus record`) must not overwrite with its
    # own default what was given before it (`corpus -q record`); apply() supplies them.
    p = argparse.ArgumentParser(add_help=False, argument_default=argparse.SUPPRESS)
    group = p.add_argument_group("output")
    group.add_argument("--version", action=VersionAction)
    loud = group.add_mutually_exclusive_group()
    loud.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        help="only what needs acting on: errors, problems found, the summary line, `written:`",
    )
    loud.add_argument(
        "-v",
        "--verbose",
        action="count",
        help="more detail (matrix: a progress line per finished cell)",
    )
    group.add_argument(
        "--color",
        choices=colour.CHOICES,
        help="colour the output: auto (default: a terminal, unless NO_COLOR is set; "
        "FORCE_COLOR forces it), always or never",
    )
    return p


def apply(args: argparse.Namespace) -> None:
    """The options' effect, for the command about to run (a fresh choice per main())."""
    verbosity.choose(quiet=getattr(args, "quiet", False), verbose=getattr(args, "verbose", 0))
    colour.choose(getattr(args, "color", None))


__all__ = ["VersionAction", "apply", "parent"]
