"""`killpoint matrix`'s options: the kill path is fast unless --kills real is given; the
cut model is synced unless --cut says otherwise."""

# ruff: noqa: SIM300

from __future__ import annotations

import argparse

import pytest

from killpoint.cli import matrix as cli_matrix
from killpoint.errors import OptionError


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    cli_matrix.add_parser(parser.add_subparsers(dest="command"))
    return parser.parse_args(["matrix", *argv])


def test_the_command_resumes_from_traced_copies_unless_told_real() -> None:
    assert cli_matrix.config_from(parse()).kills == "fast"
    assert cli_matrix.config_from(parse("--kills", "real")).kills == "real"


def test_an_unknown_kill_path_is_one_line_naming_the_choices() -> None:
    with pytest.raises(OptionError, match=r"--kills='both'.*choose from fast, real"):
        cli_matrix.config_from(parse("--kills", "both"))


def test_the_cut_model_is_synced_unless_told() -> None:
    """`--cut` reaches the engine's config (every power-loss cell reads it there)."""
    assert "synced" == cli_matrix.config_from(parse()).engine_config().cut
    assert "torn-seq" == cli_matrix.config_from(parse("--cut", "torn-seq")).engine_config().cut
    assert "torn-op:byte" == cli_matrix.config_from(parse("--cut", "torn-op:byte")).cut


def test_an_unknown_cut_model_is_one_line_naming_the_choices() -> None:
    with pytest.raises(OptionError) as caught:
        cli_matrix.config_from(parse("--cut", "torn"))
    assert (
        "killpoint: --cut='torn': not a cut model; choose from synced (the default), torn-op, "
        "torn-op:byte, torn-op:N, torn-seq, reorder"
    ) == str(caught.value)
