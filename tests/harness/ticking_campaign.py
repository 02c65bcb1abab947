"""A real `killpoint matrix` of the ticking scenario, for tests that fault killpoint
itself mid-campaign (a signal, a store outage, a full disk): each tool call a worker
makes writes a byte to a FIFO, so a test waits on that pipe, never on a clock."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import psutil

from killpoint.engine.polling import poll
from killpoint.report.journal import journal_path

REPO = Path(__file__).resolve().parents[2]
TICKING = "tests.harness.scenarios_for_tests:TICKING"


def ctrl_c_default() -> None:
    """For a child a test sends Ctrl-C to: as a terminal's foreground job has it, whatever
    the test's own process inherited (a background job of a script ignores SIGINT)."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _ignoring(signals: tuple[signal.Signals, ...]) -> Callable[[], None]:
    def start() -> None:
        ctrl_c_default()
        for signum in signals:
            signal.signal(signum, signal.SIG_IGN)

    return start


def read_ticks(fd: int, want: int, timeout: float) -> int:
    """Block on the FIFO until `want` ticks (tool calls in workers) have been read."""
    got = 0
    end = time.monotonic() + timeout
    while got < want:
        ready, _, _ = select.select([fd], [], [], max(0.0, end - time.monotonic()))
        assert ready, f"only {got} of {want} ticks"
        try:
            got += len(os.read(fd, 4096))
        except BlockingIOError:
            continue
    return got


def cell_lines(path: Path) -> list[dict[str, object]]:
    """The finished cells of a journal another process is writing (its whole lines)."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_bytes().splitlines(keepends=True)
            if line.endswith(b"\n") and b'"cell"' in line[:12]]  # fmt: skip


class TickingCampaign:
    """`killpoint matrix --scenarios TICKING --modes tool --workers 2` with the JSON and
    HTML in `tmp`, and `extra` options after (a later option wins). `new_session`: start
    it as a shell with job control does, so a signal can go to its process group.
    `ignored`: signals ignored from its start, as a shell without job control (a script's
    `killpoint matrix ... &`) starts a background job (SIGINT), or nohup does (SIGHUP)."""

    def __init__(
        self,
        tmp: Path,
        *extra: str,
        env: dict[str, str] | None = None,
        new_session: bool = False,
        ignored: tuple[signal.Signals, ...] = (),
    ) -> None:
        self.json = tmp / "m.json"
        self.html = tmp / "m.html"
        fifo = tmp / "ticks"
        os.mkfifo(fifo)
        self.fd = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "killpoint.cli.main", "matrix", "--scenarios", TICKING,
             "--modes", "tool", "--workers", "2",
             "--json", str(self.json), "--report", str(self.html), *extra],
            cwd=REPO, env={**os.environ, **(env or {}), "KILLPOINT_TEST_TICKS": str(fifo)},
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            start_new_session=new_session,
            # A shell with job control gives its foreground job Ctrl-C back; the test's
            # own process may have it ignored (a background job of a script does).
            preexec_fn=_ignoring(ignored),
        )  # fmt: skip

    def ticks(self, want: int, timeout: float = 120) -> int:
        return read_ticks(self.fd, want, timeout)

    def finished(self, want: int = 1, timeout: float = 120) -> None:
        """Until the campaign's journal holds `want` finished cells: ticks count tool
        calls, and cells waiting on a lease may make many before any cell ends."""
        journal = journal_path(self.json)
        enough = poll(lambda: len(cell_lines(journal)) >= want, timeout, threading.Event())
        assert enough, f"no {want} finished cells in {journal}"

    def family(self) -> list[psutil.Process]:
        return psutil.Process(self.proc.pid).children(recursive=True)

    def finish(self, timeout: float = 120) -> tuple[str, str]:
        """The command's stdout and stderr once it ends; killed if it has not by then."""
        try:
            return self.proc.communicate(timeout=timeout)
        finally:
            self.close()

    def close(self) -> None:
        """Stop reading the FIFO and kill the command if it still runs (idempotent)."""
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
