"""Run content cut to one line (killpoint.report.text.cut): a sentence that ends in a
worker's traceback (a baseline's problem, killpoint.engine.cell_run.log_tail) showed the
traceback's head, the worker's and asyncio's frames, and was cut before the runtime's own
frames and the exception."""

# ruff: noqa: SIM300
from __future__ import annotations

from killpoint.report.text import TEXT, cut, split_excerpt

SENTENCE = (
    "the baseline run failed (error): IndexError: list index out of range "
    "(at myagent/runtime.py:215, in _loop)"
)
TRACEBACK = """\
Traceback (most recent call last):
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/asyncio/runners.py", line 190, in run
    return runner.run(main)
           ^^^^^^^^^^^^^^^^
  File "/root/.pyenv/versions/3.11.7/lib/python3.11/asyncio/base_events.py", line 653, in x
    return future.result()
           ^^^^^^^^^^^^^^^
  File "/srv/app/myagent/runtime.py", line 215, in _loop
    step = plan[index]
           ~~~~^^^^^^^
IndexError: list index out of range"""
PROBLEM = f"{SENTENCE}\n--- baseline stderr ---\n{TRACEBACK}"


class TestCut:
    def test_a_sentence_with_a_traceback_keeps_the_traceback_end(self) -> None:
        """The one line is the sentence, then the end of the log: the user's own frame and
        the exception, never asyncio's frames that every such traceback starts with."""
        line = cut(PROBLEM)
        assert len(line) <= TEXT
        assert line.startswith(f"{SENTENCE} --- baseline stderr, its end: …"), line
        assert line.endswith(
            'File "…/myagent/runtime.py", line 215, in _loop step = plan[index] '
            "IndexError: list index out of range"
        ), line
        assert "asyncio" not in line
        assert "^" not in line and "~~" not in line  # position markers take a frame's place
        assert "/srv/app" not in line  # a frame's file is its folder and name: room for more

    def test_a_sentence_that_leaves_no_room_is_cut_first_never_the_traceback(self) -> None:
        """The sentence names the exception and its line already: where it fills the line,
        it is what the line shows, cut with an ellipsis; no frame of the excerpt's head."""
        line = cut(PROBLEM, 120)
        assert len(line) <= 120 and line.endswith("…")
        assert line.startswith(SENTENCE[:100]), line
        assert "asyncio" not in line and "Traceback" not in line

    def test_text_that_fits_or_has_no_excerpt_is_cut_as_before(self) -> None:
        """Every other sentence: one line, its head kept, an ellipsis where it was cut."""
        assert "a b c" == cut("a\n b   c")
        assert "x" * 9 + "…" == cut("x" * 20, 10)
        short = "failed\n--- baseline stderr ---\nValueError: no"
        assert "failed --- baseline stderr --- ValueError: no" == cut(short)


def test_split_excerpt_parts_a_sentence_from_its_log() -> None:
    assert (SENTENCE, "baseline stderr", TRACEBACK) == split_excerpt(PROBLEM)
    assert ("no log here", "", "") == split_excerpt("no log here")
