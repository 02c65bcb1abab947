"""`killpoint matrix`'s options: the kill path is fast unless --kills real is given."""

from __future__ import annotations

import argparse

import pytest

from killpoint.cli import matrix as cli_matrix
from killpoint.engine.options import OptionError


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli_matrix.add_parser(parser.add_subparsers(dest="command"), "work dir", int)
    return parser.parse_args(["matrix", *argv])


def test_the_command_resumes_from_traced_copies_unless_told_real() -> None:
    assert cli_matrix.config_from(parse()).kills == "fast"
    assert cli_matrix.config_from(parse("--kills", "real")).kills == "real"


def test_an_unknown_kill_path_is_one_line_naming_the_choices() -> None:
    with pytest.raises(OptionError, match=r"--kills='both'.*choose from fast, real"):
        cli_matrix.config_from(parse("--kills", "both"))
