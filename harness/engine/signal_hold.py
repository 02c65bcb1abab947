"""The signals that stop killpoint, held once stopping has begun.

Ctrl-C, SIGTERM and SIGHUP stop a campaign by raising in the main thread (where it
waits). Raised again while the campaign winds down (killing workers, waiting for the
cells in flight) or while its reports are replaced, the same exception would lose
everything that finished. So from the first interrupt, or from the last cell's end,
until the reports are written, a hold records each signal instead: the campaign reads
a second one as "give up the cells in flight", and the writing runs to its end.

A signal ignored when the hold engages is left ignored: that is how a shell runs a
background job (SIGINT ignored, on purpose, so that a Ctrl-C meant for the foreground
does not stop it), and how nohup runs a command. Recorded, it would end the campaign as
interrupted if it came while the reports were written, and be lost at any other moment.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType
from typing import Any

STOPPING = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class SignalHold:
    """Engaged: every stopping signal not ignored before is recorded in `received`, none
    raises. Released: the handlers before it are back. Only the main thread can hold
    signals; elsewhere (a campaign run from a thread) engaging does nothing."""

    def __init__(self) -> None:
        self.received: list[int] = []
        self._previous: dict[int, Any] = {}
        self._engaged = False

    @property
    def engaged(self) -> bool:
        return self._engaged

    def engage(self) -> None:
        if self.engaged or threading.current_thread() is not threading.main_thread():
            return
        self._engaged = True
        for signum in STOPPING:
            if signal.getsignal(signum) is signal.SIG_IGN:
                continue  # ignored by whoever started killpoint: see the module's docstring
            previous = signal.signal(signum, self._record)
            # None: a handler installed outside Python, which cannot be put back as it
            # was; the default is the nearest.
            self._previous[signum] = signal.SIG_DFL if previous is None else previous

    def _record(self, signum: int, frame: FrameType | None) -> None:
        self.received.append(signum)

    def release(self) -> None:
        previous, self._previous = self._previous, {}
        self._engaged = False
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    def __enter__(self) -> SignalHold:
        self.engage()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


__all__ = ["STOPPING", "SignalHold"]
