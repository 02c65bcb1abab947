"""Stops a test session's PostgreSQL server when the session's process is gone.

    python -m tests.pg_watchdog PID BASE COMMAND...

Waits for process PID to end (a pidfd where the kernel has them, else its parent pid
changing), then runs COMMAND (`pg_ctl ... stop`) and removes the folder BASE. Started by
tests/conftest.py in a session of its own, so that a signal to the test run's process
group does not end it before it has done its job.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import sys
import time


def wait_for_exit(pid: int) -> None:
    try:
        fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        # No pidfd: we are PID's child, so PID is gone when we are given another parent.
        while os.getppid() == pid:
            time.sleep(0.5)
        return
    try:
        select.select([fd], [], [])
    finally:
        os.close(fd)


def main(argv: list[str]) -> int:
    pid, base, command = int(argv[0]), argv[1], argv[2:]
    wait_for_exit(pid)
    subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=120, check=False)
    shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
