"""The `killpoint` command's exit statuses, in one place (docs/reference/exit-codes.md).

0    every verdict expected (or accepted)
1    an unexpected verdict
2    bad input: one line names the value and the fix; nothing ran, nothing was written
3    the results could not be written where asked (written to a fallback, named)
5    no cell ran: every row or point was skipped (each reason printed), as pytest's 5; or
     --rerun-failed found no unexpected cell in a report that did not run its whole plan
130  interrupted (Ctrl-C, SIGINT); 143 on SIGTERM, 129 on SIGHUP: every worker is killed
     and the cells that finished are written
"""

from __future__ import annotations

import signal

EXIT_OK = 0
EXIT_UNEXPECTED = 1
EXIT_USAGE = 2
EXIT_NOT_WRITTEN = 3
# pytest's "no tests collected": a CI job that asked for cells and got none is not green.
EXIT_NO_CELLS = 5


def interrupted_status(signum: int | None) -> int:
    """128 + the signal's number, as a shell reports a process ended by it."""
    return 128 + int(signum or signal.SIGINT)


__all__ = [
    "EXIT_NOT_WRITTEN",
    "EXIT_NO_CELLS",
    "EXIT_OK",
    "EXIT_UNEXPECTED",
    "EXIT_USAGE",
    "interrupted_status",
]
