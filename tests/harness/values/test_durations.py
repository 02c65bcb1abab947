# ruff: noqa: SIM300 - tests assert `expected == actual`
"""One time format everywhere (issue 56 found "54.3 ms", "0.0341s", "0.083 s" and
"743.826 s" in one campaign's outputs): killpoint.values.durations, and no other time
formatting left in killpoint's texts."""

from __future__ import annotations

import io
import re
import tokenize
from pathlib import Path

import pytest

from killpoint.values.durations import duration, offset

HARNESS = Path(__file__).resolve().parents[3] / "harness"


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "0 ms"),
        (0.0341, "34 ms"),
        (0.0543, "54 ms"),
        (0.9996, "1.0 s"),
        (1.149, "1.1 s"),
        (59.96, "1 min 0 s"),
        (743.826, "12 min 24 s"),
        (7384, "2 h 3 min"),
    ],
)
def test_each_length_of_time_reads_one_way(seconds: float, shown: str) -> None:
    assert shown == duration(seconds)


def test_an_instant_on_a_cells_clock_has_its_sign() -> None:
    assert ("+1.3 s", "-40 ms") == (offset(1.26), offset(-0.04))


# A time formatted by hand: a float's format spec followed by a unit ("{t:.3f} s", "{t:8.4f}s").
HAND_MADE = re.compile(r"\{[^{}]*:[^{}]*[fg]\}\s?m?s\b")


def test_no_text_formats_time_by_hand() -> None:
    found = []
    for path in sorted(HARNESS.rglob("*.py")):
        tokens = tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline)
        found += [
            f"{path.name}:{t.start[0]}: {m.group()}"
            for t in tokens
            if t.type == tokenize.STRING
            for m in HAND_MADE.finditer(t.string)
        ]
    assert not found, "\n".join(found)
