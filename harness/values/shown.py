"""Text from a run or a file made safe to show: the one function every printed line of
killpoint's passes (the command, the pytest plugin, the demo), and the character rules
the HTML and JSON share.

Run content (a tool's output, an adapter's finding, a report or corpus someone else
wrote) may hold anything. Shown raw it can:

- command a CI runner: GitHub Actions reads a line of a step's output as a workflow
  command when, leading whitespace trimmed, it begins with `::` (`::add-mask::`,
  `::stop-commands::`, which silences every later command, killpoint's own annotations
  included), and wherever `##[` stands in a line (the runner's legacy form, still read);
- drive the terminal: ESC starts a control sequence (colours, cursor moves, a window
  title), BEL rings, C1 controls (U+0080 to U+009F) are control sequences to some
  terminals, and NEL, U+2028 and U+2029 end a line for some readers;
- reorder what is read (bidi overrides), or break an encoder (lone surrogates).

`line(text)` makes a text one line that can do none of that: every control character,
separator and override shown as an escape (a newline as `\\n`), `##[` broken as `##\\[`,
and a line that would begin with `::` shown as `\\::`. `lines(text)` keeps the breaks of
a block killpoint shows as several lines (a traceback's tail) and treats each line so.
`visible(text)` is the rule the HTML report and the JSON apply, where a newline is
content: the same escapes but for tab and newline, and no command to break (a page and
a file are not a runner's log).
"""

from __future__ import annotations

import json
import re
import unicodedata
from typing import Any

# C0 controls but tab and newline, DEL, C1 controls (NEL among them).
_CONTROL = "\x00-\x08\x0b-\x1f\x7f-\x9f"
_SEPARATORS = "\u2028\u2029"
_BIDI = "\u200e\u200f\u202a-\u202e\u2066-\u2069"
_SURROGATES = "\ud800-\udfff"
_HIDDEN = re.compile(f"[{_CONTROL}{_SEPARATORS}{_BIDI}{_SURROGATES}]")
_HIDDEN_OR_BREAK = re.compile(f"[\n{_CONTROL}{_SEPARATORS}{_BIDI}{_SURROGATES}]")
_NAMED = {"\n": "\\n", "\r": "\\r"}
LEGACY_COMMAND = "##["  # the runner reads it anywhere in a line
COMMAND = "::"  # the runner reads it at a line's start, after whitespace


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    if char in _NAMED:
        return _NAMED[char]
    code = ord(char)
    if 0xD800 <= code <= 0xDFFF:
        return "\ufffd"
    if code <= 0xFF:
        return f"\\x{code:02x}"
    return f"<U+{code:04X}>"


def _text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def visible(value: Any) -> str:
    """Text that shows what it holds, newlines and tabs kept: no control character,
    separator, bidi override or lone surrogate (each shown as an escape)."""
    text = _text(value)
    if not _HIDDEN.search(text):
        return text  # the common case: one scan
    return _HIDDEN.sub(_escape, text)


def _blank(char: str) -> bool:
    """What a runner may trim from a line's start: any whitespace, or a character that
    shows nothing (a format character, a zero-width space): trimming more than it does
    costs a backslash, trimming less would let a command through."""
    return char.isspace() or unicodedata.category(char) in ("Cc", "Cf", "Zs", "Zl", "Zp")


def line(value: Any) -> str:
    """One line of a terminal or a CI log, safe whatever `value` holds: controls,
    separators and overrides escaped (a newline shown as `\\n`), no workflow command."""
    text = _text(value)
    if _HIDDEN_OR_BREAK.search(text):
        text = _HIDDEN_OR_BREAK.sub(_escape, text)
    if COMMAND not in text and LEGACY_COMMAND not in text:
        return text  # the common case
    text = text.replace(LEGACY_COMMAND, "##\\[")
    start = 0
    while start < len(text) and _blank(text[start]):
        start += 1
    if text.startswith(COMMAND, start):
        text = f"{text[:start]}\\{text[start:]}"
    return text


def lines(value: Any) -> str:
    """A block of lines, each made safe as `line` makes one (its breaks kept: `\\r\\n` and
    `\\n`; any other break character is escaped within its line)."""
    return "\n".join(line(part) for part in _text(value).replace("\r\n", "\n").split("\n"))


__all__ = ["COMMAND", "LEGACY_COMMAND", "line", "lines", "visible"]
