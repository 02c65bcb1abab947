"""Stops a test session's PostgreSQL server when the session's process is gone.

    python -m tests.pg_watchdog PID BASE COMMAND...

Waits for process PID to end (a pidfd where the kernel has them, else its parent pid
changing), then runs COMMAND (`pg_ctl ... stop`) and removes the folder BASE. Started by
tests/conftest.py in a session of its own, so that a signal to the test run's process
group does not end it before it has done its job.
"""

from __future__ import annotations

import shutil
import subprocess
import sys

from killpoint.workers.forkserver.watch import wait_for


def main(argv: list[str]) -> int:
    pid, base, command = int(argv[0]), argv[1], argv[2:]
    wait_for(pid)
    subprocess.run(command, stdin=subprocess.DEVNULL, capture_output=True, timeout=120, check=False)
    shutil.rmtree(base, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
