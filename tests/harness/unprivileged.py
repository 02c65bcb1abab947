"""Running a command as a user of its own, under a real RLIMIT_NPROC.

The kernel never holds root's real uid (nor CAP_SYS_RESOURCE) to `ulimit -u`, so a test
of that limit must leave root: each gets a fresh uid (no other process has it, so the
limit counts only what the test starts) and a folder that uid owns. The interpreter may
live where only root can look (`/root/.pyenv`): the user keeps one capability,
CAP_DAC_READ_SEARCH (read and search any file, write none), as an ambient capability
that every process it starts inherits; it gives no exemption from the limit.
"""

from __future__ import annotations

import os
import resource
import shutil
import subprocess
import tempfile
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import psutil
import pytest

FIRST_UID = 2_000_000_000  # far above any account's: a uid no one else runs as


def fresh_uid() -> int:
    """A uid of this test's own (pids are unique on the machine while the test runs)."""
    return FIRST_UID + os.getpid()


def need_root_and_setpriv() -> None:
    if os.geteuid() != 0:
        pytest.skip("running a campaign as another user under `ulimit -u` needs root")
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv (util-linux) is not installed")


@contextmanager
def user_home() -> Iterator[tuple[int, Path]]:
    """A fresh uid and a folder it owns (its HOME, TMPDIR and work folder), short enough
    for the forkserver's socket path; removed afterwards."""
    need_root_and_setpriv()
    uid = fresh_uid()
    home = Path(tempfile.mkdtemp(prefix=f"kp-{uid}-"))
    try:
        os.chown(home, uid, uid)
        yield uid, home
    finally:
        shutil.rmtree(home, ignore_errors=True)


def run_as(
    uid: int, nproc: int, argv: Sequence[str], home: Path, timeout: float = 600
) -> subprocess.CompletedProcess[str]:
    """`argv` as `uid`, its processes and threads limited to `nproc` in all."""

    def limit() -> None:  # before setpriv drops root: the limit is inherited across exec
        resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))

    env = {**os.environ, "HOME": str(home), "TMPDIR": str(home)}
    command = [
        "setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups",
        "--inh-caps=+dac_read_search", "--ambient-caps=+dac_read_search", "--", *argv,
    ]  # fmt: skip
    return subprocess.run(
        command, preexec_fn=limit, env=env, cwd=home, capture_output=True, text=True,
        timeout=timeout, check=False,
    )  # fmt: skip


def processes_of(uid: int) -> list[psutil.Process]:
    """Every process still running as `uid` (an exited one that init has not reaped
    yet, as multiprocessing's resource tracker is a moment after its parent, runs
    nothing)."""
    found = []
    for proc in psutil.process_iter(["uids", "status"]):
        uids = proc.info["uids"]
        if uids is not None and uids.real == uid and proc.info["status"] != psutil.STATUS_ZOMBIE:
            found.append(proc)
    return found


def outliving(uid: int, grace: float = 10.0) -> list[psutil.Process]:
    """The processes of `uid` that outlive what ran as it: each one still running is
    waited for (its exit, not a timer) for up to `grace` seconds, since one may be exiting
    at this very moment (multiprocessing's resource tracker ends a moment after its
    parent); what is left running, and is no zombie, outlived it."""
    _, alive = psutil.wait_procs(processes_of(uid), timeout=grace)
    left = []
    for proc in alive:
        try:
            if proc.status() != psutil.STATUS_ZOMBIE:
                left.append(proc)
        except psutil.NoSuchProcess:
            continue
    return left


__all__ = [
    "fresh_uid",
    "need_root_and_setpriv",
    "outliving",
    "processes_of",
    "run_as",
    "user_home",
]
