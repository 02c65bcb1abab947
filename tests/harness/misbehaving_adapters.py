"""Reference adapters that misbehave where killpoint cannot stop them by killing a worker
(`tests.harness.misbehaving_adapters:NAME`): a call in the engine's own process that
never returns, a tool whose child process outlives its worker."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from typing import Any

from killpoint.adapters.reference import ReferenceAdapter, ReferenceDriver
from killpoint.values.findings import Finding

# Set by a test: the FIFO a misbehaving call writes a line to as it begins.
FIFO_ENV = "KILLPOINT_TEST_FIFO"
# In the argv and the environment of every process a Leaving worker leaves behind.
MARKER_ENV = "KILLPOINT_TEST_LEFT_BEHIND"


def _tell(what: str) -> None:
    fifo = os.environ.get(FIFO_ENV)
    if fifo:
        with open(fifo, "w") as f:
            f.write(f"{what}\n")


class HangingInspect(ReferenceAdapter):
    """inspect(), called by the engine after each crash, never returns."""

    def inspect(self, store_url: str, session_id: str) -> Sequence[str | Finding]:
        _tell("inspect")
        threading.Event().wait()
        return []


# Ignores SIGTERM and SIGHUP, then waits for as long as anyone lets it.
_STAY = (
    "import signal, sys, threading;"
    "signal.signal(signal.SIGTERM, signal.SIG_IGN);"
    "signal.signal(signal.SIGHUP, signal.SIG_IGN);"
    "threading.Event().wait()"
)


def leave_behind() -> None:
    """Two processes that would outlive the worker: one in a session of its own (setsid),
    one left in the worker's process group; both ignore SIGTERM."""
    marker = os.environ.get(MARKER_ENV, "")
    if not marker:
        return
    env = {**os.environ, MARKER_ENV: marker}
    for new_session in (True, False):
        subprocess.Popen(
            [sys.executable, "-c", _STAY, marker],
            env=env,
            start_new_session=new_session,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )


class LeavingDriver(ReferenceDriver):
    async def start(self, input: str, *, session_id: str, run_id: str) -> Any:
        leave_behind()
        return await super().start(input, session_id=session_id, run_id=run_id)

    async def resume(self, run_id: str, *, session_id: str, confirmations: Any) -> Any:
        leave_behind()
        return await super().resume(run_id, session_id=session_id, confirmations=confirmations)


class Leaving(ReferenceAdapter):
    """Every worker, at each start and resume, starts children that outlive it."""

    driver_class = LeavingDriver


class HangingReadSession(ReferenceAdapter):
    """read_session(), called by the engine (and by check-adapter), never returns."""

    def read_session(self, store_url: str, session_id: str) -> dict[str, Any] | None:
        _tell("read_session")
        threading.Event().wait()
        return None


class OwnInspect(ReferenceAdapter):
    """inspect() of its own (here the reference's, called through): the engine cannot take
    the reference's word that its reads are bounded."""

    def inspect(self, store_url: str, session_id: str) -> Sequence[str | Finding]:
        return super().inspect(store_url, session_id)
