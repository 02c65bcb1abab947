"""`killpoint matrix --shard K/N` refuses what names no shard, in one line (exit 2), and
a shard without a seed (shards must plan the same campaign)."""

# ruff: noqa: SIM300

from __future__ import annotations

from pathlib import Path

import pytest

from tests.harness.cli.test_rerun import killpoint, refused


@pytest.mark.parametrize(
    ("value", "fix"),
    [("0/2", "give 1/2 to 2/2"), ("3/2", "give 1/2 to 2/2"), ("a/b", "e.g. 1/2")],
)
def test_a_bad_shard_is_one_line_naming_value_and_fix(tmp_path: Path, value: str, fix: str) -> None:
    """Nothing runs, nothing is written."""
    result = killpoint("matrix", "--shard", value, "--seed", "1", "--json", "x.json", cwd=tmp_path)
    refused(result, f"--shard={value!r}", fix)
    assert [] == list(tmp_path.iterdir())


def test_a_shard_needs_a_seed(tmp_path: Path) -> None:
    result = killpoint("matrix", "--shard", "1/2", "--json", "x.json", cwd=tmp_path)
    refused(result, "--shard='1/2'", "--seed")
    assert [] == list(tmp_path.iterdir())
