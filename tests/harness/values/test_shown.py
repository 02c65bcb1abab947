"""The one function every printed line passes: whatever a run or a file holds, the line
commands no CI runner and drives no terminal, and still shows what it holds."""

from __future__ import annotations

import pytest

from killpoint.values.shown import line, lines, visible
from tests.harness.runner_commands import HOSTILE, MARKERS, commands, controls


class TestLine:
    def test_hostile_text_is_one_inert_line(self) -> None:
        shown = line(HOSTILE)
        assert commands(shown) == [] and controls(shown) == []
        assert len(shown.splitlines()) == 1
        for marker in MARKERS:  # still shown, escaped
            assert marker in shown

    @pytest.mark.parametrize(
        ("text", "shown"),
        [
            ("plain text: a finding", "plain text: a finding"),
            ("a\nb", "a\\nb"),
            ("a\r\nb", "a\\r\\nb"),
            ("::error::x", "\\::error::x"),
            ("  ::error::x", "  \\::error::x"),
            ("\u00a0::error::x", "\u00a0\\::error::x"),
            ("\u200b::error::x", "\u200b\\::error::x"),
            ("x ##[error]y", "x ##\\[error]y"),
            ("bell\x07 esc\x1b[31m", "bell\\x07 esc\\x1b[31m"),
            ("nel\x85 csi\x9b", "nel\\x85 csi\\x9b"),
            ("ls\u2028ps\u2029", "ls<U+2028>ps<U+2029>"),
            ("a::b", "a::b"),
            ("tab\tkept", "tab\tkept"),
        ],
    )
    def test_each_rule(self, text: str, shown: str) -> None:
        assert line(text) == shown

    def test_already_shown_text_stays_as_it_is(self) -> None:
        once = line(HOSTILE)
        assert line(once) == once

    def test_not_a_string(self) -> None:
        assert line({"k": 1}) == '{"k": 1}'


class TestLines:
    def test_keeps_breaks_and_treats_each_line(self) -> None:
        shown = lines("first\n::add-mask::x\r\n##[error]y")
        assert shown.split("\n") == ["first", "\\::add-mask::x", "##\\[error]y"]
        assert commands(lines(HOSTILE)) == [] and controls(lines(HOSTILE)) == []


class TestVisible:
    def test_keeps_newlines_escapes_the_rest(self) -> None:
        """The HTML's and the JSON's rule: a newline is content there."""
        assert visible("a\nb\x1b[2J\x85\u2028") == "a\nb\\x1b[2J\\x85<U+2028>"
        assert controls(visible(HOSTILE)) == []
