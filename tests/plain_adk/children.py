"""The app of tests.plain_adk.app as child processes: started, released together, held
and killed, read line by line (no sleep: every wait reads the child's pipe)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT = 120.0


class Child:
    def __init__(self, db_url: str, what: str, invocation: str, **knobs: object) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        env.update({f"PLAIN_ADK_{k.upper()}": str(v) for k, v in knobs.items()})
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.plain_adk.app", db_url, what, "s", invocation],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
            cwd=ROOT,
            start_new_session=True,
        )
        self.lines: list[str] = []

    def until(self, prefix: str) -> str:
        """The child's first line from now on that starts with `prefix` (it exits: "")."""
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line.strip())
            if line.startswith(prefix):
                return line.strip()
        return ""

    def go(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def end(self) -> str:
        """Its last line ("status: done" or "raised: ..."), once it has exited."""
        last = self.until("status:") or next(
            (line for line in reversed(self.lines) if line.startswith("raised")), ""
        )
        if not last:
            last = self.until("raised")
        self.proc.wait(TIMEOUT)
        return last

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(TIMEOUT)


def run(db_url: str, what: str, invocation: str, **knobs: object) -> str:
    """One child run to its end: its last line."""
    child = Child(db_url, what, invocation, **knobs)
    child.until("ready")
    child.go()
    return child.end()
