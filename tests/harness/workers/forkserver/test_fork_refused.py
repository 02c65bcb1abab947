"""A fork the kernel refuses the forkserver (RLIMIT_NPROC, for real) costs that one
worker: the start says NoProcess, and the same forkserver forks the next one."""

# ruff: noqa: SIM300

from __future__ import annotations

import json
import sys

import pytest

from tests.harness.unprivileged import outliving, run_as, user_home

pytestmark = pytest.mark.slow

# Run as a user of its own: the forkserver is started, then its own RLIMIT_NPROC is set
# below what the user already runs (prlimit, soft limit only: the user may raise it back).
SCRIPT = """
import json, os, resource, time
from killpoint.workers import processes
from killpoint.workers.limits import NoProcess
from killpoint.workers.worker import WorkerSpec

ctx = processes.context()
first = ctx.Process(target=os.getpid)
first.start(); first.join()
server = processes.forkserver_pid()
hard = resource.getrlimit(resource.RLIMIT_NPROC)[1]
resource.prlimit(server, resource.RLIMIT_NPROC, (1, hard))
spec = WorkerSpec("reference", "research", "tool-batch", "sqlite:///x.db", os.getcwd(), "s")
try:
    processes.Worker(spec, [], time.monotonic())
    refused = None
except NoProcess as exc:
    refused = str(exc)
resource.prlimit(server, resource.RLIMIT_NPROC, (hard, hard))
after = ctx.Process(target=os.getpid)
after.start(); after.join()
print(json.dumps({"refused": refused, "same": processes.forkserver_pid() == server,
                  "alive": os.waitpid(server, os.WNOHANG) == (0, 0), "exit": after.exitcode}))
processes.stop_forkserver()
"""


def test_a_refused_fork_is_one_workers_no_process_and_the_forkserver_goes_on() -> None:
    with user_home() as (uid, home):
        done = run_as(uid, 200, [sys.executable, "-c", SCRIPT], home, timeout=300)
        assert not outliving(uid), "a process of the forkserver outlived it"
    assert 0 == done.returncode, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    seen = json.loads(done.stdout.splitlines()[-1])
    assert seen["refused"] is not None, "the refused fork was not NoProcess"
    assert seen["refused"].startswith("killpoint could not start a process for a worker (")
    assert {"same": True, "alive": True, "exit": 0} == {
        k: seen[k] for k in ("same", "alive", "exit")
    }
