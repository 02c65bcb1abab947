# ruff: noqa: SIM300
"""The installed script's first step: a Ctrl-C while the command is still importing."""

from __future__ import annotations

import fcntl
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


def pending(fd: int) -> int:
    """Bytes waiting in a pipe, unread."""
    return struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]


def test_ctrl_c_while_the_command_imports_is_one_quiet_line() -> None:
    """Started as a terminal's foreground job would be (its own group, Ctrl-C at its
    default), the command is held in the middle of its imports: with -X importtime every
    import writes a line to stderr, and stderr is a pipe of one page that nobody reads
    until the Ctrl-C has been sent. It must end 130 with one line, no traceback."""
    read, write = os.pipe()
    # 16 KiB: past the interpreter's own start-up (about 3 KiB of lines) and well before
    # the command's imports end (about 45 KiB).
    size = fcntl.fcntl(write, fcntl.F_SETPIPE_SZ, 16384)
    proc = subprocess.Popen(
        [
            sys.executable,
            "-X",
            "importtime",
            "-c",
            "from killpoint.cli.entry import entry; entry()",
            "scenarios",
        ],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=write,
        start_new_session=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    os.close(write)
    try:
        # A full pipe means the child is blocked in a write, in the middle of importing.
        # (less a line: a line that does not fit whole blocks its writer, PIPE_BUF)
        deadline = time.monotonic() + 60
        while pending(read) < size - 1024:
            assert proc.poll() is None, "the command ended before its stderr filled"
            assert time.monotonic() < deadline, f"stderr holds only {pending(read)} bytes"
            select.select([], [], [], 0.01)
        os.killpg(proc.pid, signal.SIGINT)
        with os.fdopen(read, "rb", buffering=0) as pipe:
            rest = pipe.read()
        assert 130 == proc.wait(60)
    finally:
        if proc.poll() is None:
            proc.kill()
    ours = [
        line
        for line in rest.decode(errors="replace").splitlines()
        if not line.startswith("import time:")
    ]
    assert ["killpoint: interrupted while starting; nothing ran"] == ours, ours
