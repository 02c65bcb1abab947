"""What a GitHub Actions runner would read as a workflow command in a step's output, and
the hostile text the tests print through every face of killpoint.

Written from the runner's own rules (actions/runner, ActionCommand.cs and
ActionCommandManager.cs), not from killpoint's: a line (split at \\n, \\r or \\r\\n, as
.NET's ReadLine splits) is a command when, its leading whitespace trimmed, it begins with
`::`; or when `##[` stands anywhere in it (the legacy form the runner still reads). Any
such line counts here, whatever the command's name: stricter than the runner.
"""

from __future__ import annotations

import re

# Each a way run content has been seen, or could be, to command a runner or a terminal.
HOSTILE = (
    "ok\n::add-mask::hunter2\n::stop-commands::silenced\r\n::error title=pwned::raw newline"
    "\r::warning::carriage return\u2028::notice::line separator\u2029::debug::paragraph"
    "\x85::group::next line\n\u00a0\u3000::endgroup::unicode spaces\n\t::echo::tab"
    " ##[error]legacy anywhere ##[set-output name=x;]y"
    " \x1b]0;title\x07\x1b[2J\x1b[31mred\x9b31m\x07 \u202eevil\u202c \ud800"
)
MARKERS = ("hunter2", "silenced", "pwned", "legacy anywhere")


def lines(text: str) -> list[str]:
    return re.split(r"\r\n|\r|\n", text)


def commands(text: str) -> list[str]:
    """The lines of `text` a runner would take for a workflow command."""
    found = []
    for line in lines(text):
        if line.lstrip().startswith("::") or "##[" in line:
            found.append(line)
    return found


def controls(text: str) -> list[str]:
    """Characters that drive a terminal or end a line for some reader, shown raw."""
    return sorted(
        {c for c in text if c in "\x1b\x07\x9b\x85\u2028\u2029\u202e" or "\ud800" <= c <= "\udfff"}
    )


__all__ = ["HOSTILE", "MARKERS", "commands", "controls", "lines"]
