"""`demo`, `search` and `replay` name the option typed (or the cell id), on stderr, exit 2;
`demo --quiet` keeps the outcome."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = pytest.mark.slow


def killpoint(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", *args],
        capture_output=True, text=True, timeout=240,
    )  # fmt: skip


class TestOptionNames:
    @pytest.mark.parametrize(
        ("args", "line"),
        [
            (
                ["demo", "--mode", "fast"],
                "killpoint: --mode='fast': not a mode of runtime 'reference'",
            ),
            (
                ["search", "--mode", "fast"],
                "killpoint: --mode='fast': not a mode of runtime 'reference'",
            ),
            (
                ["search", "--scenario", "nope"],
                "killpoint: --scenario='nope': unknown scenario 'nope'",
            ),
            (
                ["replay", "reference/research/fast/sqlite/after-checkpoint:1"],
                "killpoint: cell 'reference/research/fast/sqlite/after-checkpoint:1': its mode='fast': "
                "not a mode of runtime 'reference'",
            ),
        ],
    )
    def test_the_option_typed_or_the_cell_is_named(self, args: list[str], line: str) -> None:
        """`demo --mode` is not `--modes=`; a replayed cell's mode came from its id."""
        result = killpoint(*args)
        assert result.returncode == 2
        assert result.stderr.startswith(line), result.stderr
        assert len(result.stderr.splitlines()) == 1
        assert result.stdout == ""


class TestQuiet:
    def test_only_the_verdict_and_the_replay(self) -> None:
        """The story's steps go; its outcome stays."""
        result = killpoint("demo", "--quiet")
        assert result.returncode == 0, result.stderr
        assert result.stdout.splitlines() == [
            "   ok (expected)",
            "",
            "Replay this cell: killpoint replay reference/research/tool-batch/sqlite/after-checkpoint:1",
        ]
