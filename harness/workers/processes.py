"""Worker processes: started from a warm forkserver, watched over a pipe, killed for real.

Every started worker is registered until it is reaped, so an interrupted campaign
can kill whatever is still alive (`kill_all`).
"""

from __future__ import annotations

import contextlib
import errno
import json
import multiprocessing
import multiprocessing.connection
import os
import signal
import tempfile
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from multiprocessing import spawn
from multiprocessing.context import ForkServerContext
from typing import Any

import psutil

from killpoint.errors import Interrupted, NoProcess
from killpoint.values.timeline import Event, gate_event
from killpoint.workers.children import descendants, held_children
from killpoint.workers.worker import WorkerSpec, worker_main

# What every forkserver imports. A runtime adds its own modules (its adapter's
# `preload_modules`) when it is the first to start workers in this process: agno, say,
# is not imported for a reference-runtime campaign, since every worker pays to fork,
# and to exit from, each page of the forkserver's heap.
PRELOAD = [
    "killpoint.workers.forkserver.signals",  # first: a Ctrl-C while it preloads is not its own
    "killpoint.workers.forkserver.gc_off",  # no collection until warm.py freezes the heap
    "killpoint.workers.forkserver.watch",  # exits, killing its workers, when its parent is gone
    "killpoint.workers.forkserver.subreaper",  # what a worker leaves behind stays its child
    "killpoint.workers.forkserver.fork_refused",  # a refused fork costs a worker, not it
    # The parent's main module, run once here instead of in every worker (see there).
    # Needs the usual `if __name__ == "__main__":` guard.
    "killpoint.workers.forkserver.main",
    "killpoint.cli.main",
    "killpoint.engine.campaign",
    "killpoint.workers.worker",
    "killpoint.adapters.reference",
    "killpoint.runtime",
    "killpoint.scenarios",
    "openai",
    "openai.types.responses",
    "httpx2",
    "respx",
    "sqlalchemy",
    "sqlalchemy.dialects.sqlite.pysqlite",
    "sqlalchemy.dialects.postgresql.psycopg",
    "psutil",
]
# Last: runs what has been imported once, to warm its lazy paths (see warm.py).
WARM = "killpoint.workers.warm"
# After WARM, when a campaign asked (use_huge_pages): the warm heap on huge pages.
HUGE_HEAP = "killpoint.workers.forkserver.huge_heap"
# The main module the forkserver runs for its workers (harness/workers/forkserver/main.py).
MAIN_ENV = "KILLPOINT_FORKSERVER_MAIN"
MAX_SOCKET_PATH = 107  # sun_path is 108 bytes with its terminating NUL

_ctx: ForkServerContext | None = None
_ctx_lock = threading.Lock()
_preload: list[str] = []  # what the forkserver preloads, fixed by the first context()
_huge = False  # use_huge_pages() was called
_live: set[Worker] = set()
_live_lock = threading.Lock()
# A forkserver child's exit status is 8 bytes on a pipe, read once. Process.start() reads
# those of every other finished child (multiprocessing.process._cleanup), so a start in one
# thread and a join in another can both read one status: the loser meets EOF and records
# 255 ("could not read"). Starts and status reads take turns under this lock.
_status_lock = threading.Lock()


def context(extra_preload: Sequence[str] = ()) -> ForkServerContext:
    """The forkserver: modules imported once, every worker a fork of that warm process.

    The first call fixes what it preloads; `extra_preload` of a later call is ignored
    (its workers import those modules themselves: slower to start, nothing else)."""
    global _ctx, _preload
    with _ctx_lock:
        if _ctx is None:
            main = main_module(os.getpid())
            if main is not None:
                # Read by the forkserver when it starts (it inherits this environment).
                os.environ[MAIN_ENV] = main
            ctx = multiprocessing.get_context("forkserver")
            _preload = [*PRELOAD, *extra_preload, WARM]
            ctx.set_forkserver_preload([*_preload, *([HUGE_HEAP] if _huge else [])])
            _ctx = ctx
        return _ctx


def use_huge_pages() -> None:
    """Have the forkserver put its warm heap on huge pages (killpoint.workers.huge_pages):
    each fork and each worker's end then cost less, for about 0.2 s of CPU once, as the
    forkserver starts. Worth it to a campaign that forks many workers, not to one of a
    few cells. Once the forkserver runs, it is too late: ignored."""
    global _huge
    with _ctx_lock:
        _huge = True
        if _ctx is not None and forkserver_pid() is None:
            _ctx.set_forkserver_preload([*_preload, HUGE_HEAP])


def socket_problem() -> str | None:
    """Why no forkserver can start in this process, or None: multiprocessing puts its
    socket in the temporary folder, and an AF_UNIX path holds at most 107 bytes."""
    from multiprocessing import connection

    # Not in multiprocessing's stubs, but what its forkserver calls for its socket.
    path = os.fsencode(connection.arbitrary_address("AF_UNIX"))  # type: ignore[attr-defined]
    if path.startswith(b"\0") or len(path) <= MAX_SOCKET_PATH:
        return None
    return (
        f"killpoint: the temporary folder {tempfile.gettempdir()!r} is too long for the "
        f"forkserver's socket ({len(path)} bytes, at most {MAX_SOCKET_PATH}); "
        "set TMPDIR to a shorter folder"
    )


def main_module(parent: int) -> str | None:
    """MAIN_ENV's value for a process `parent` whose children will re-run its main
    module; None when they will not (no main module, or a package's `__main__`)."""
    data = spawn.get_preparation_data("worker")  # what each child would be given
    if "init_main_from_name" in data:
        name = data["init_main_from_name"]
        if name.rpartition(".")[2] == "__main__":
            return None  # multiprocessing never re-runs one of those
        return json.dumps({"parent": parent, "name": name})
    if "init_main_from_path" in data:
        return json.dumps({"parent": parent, "path": data["init_main_from_path"]})
    return None


@dataclass
class Outcome:
    """What waiting on a worker ended with."""

    kind: str  # "gates" | "done" | "error" | "died" | "timeout" | "interrupted"
    detail: str = ""
    results: list[dict[str, Any]] = field(default_factory=list)
    stage: str = ""  # an error's: which part of the adapter's contract ran (raised_where)
    by_harness: bool = True  # an error's: raised in killpoint's own code (own_code)


class Worker:
    def __init__(
        self,
        spec: WorkerSpec,
        timeline: list[Event],
        t0: float,
        stop: threading.Event | None = None,
    ) -> None:
        self.spec = spec
        self.timeline = timeline
        self.t0 = t0
        if stop is not None and stop.is_set():
            raise Interrupted()
        ctx = context()
        self.conn, child = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=worker_main, args=(spec, child), daemon=False)
        with _status_lock:
            try:
                self.proc.start()
            except (EOFError, OSError) as exc:
                self.conn.close()
                child.close()
                if not refused_fork(exc):
                    raise
                raise NoProcess(exc) from exc
            self.pid: int = self.proc.pid  # type: ignore[assignment]
            self.exitcode: int | None = None
            # Registered before a sweep can list the forkserver's children (it takes
            # the same lock): a worker just forked is never taken for an orphan.
            with _live_lock:
                _live.add(self)
        child.close()
        # The race with an interrupt: kill_all() sets `stop` before it lists the live
        # workers, so a worker registered after that list sees `stop` here and dies.
        if stop is not None and stop.is_set():
            self.kill()
            raise Interrupted()
        self.gates_hit: list[str] = []
        self.trace: list[str] = []
        self.acks: list[dict[str, Any]] = []
        # killpoint's own writes in the worker that the disk refused (its ledger, its model).
        self.own_writes: list[str] = []
        self.finished: Outcome | None = None
        self.event(f"{spec.log_name} started (pid {self.pid})", "start")

    def __repr__(self) -> str:
        return f"Worker({self.spec.log_name!r}, pid={self.pid})"

    def _now(self) -> float:
        return round(time.monotonic() - self.t0, 4)

    def event(self, text: str, kind: str) -> None:
        """An event of this worker's own life, on its lane."""
        self.timeline.append(Event(self._now(), text, kind, self.spec.log_name))

    # -- waiting ------------------------------------------------------------------------

    def wait(
        self, gates: frozenset[str], deadline: float, allowed: frozenset[str] | None = None
    ) -> Outcome:
        """Read the pipe until every gate in `gates` has been announced (kind "gates"),
        or the worker ends, or the deadline passes. With no gates, wait for the end.
        `allowed`: a gate announced outside it ends the wait at once (kind "stray", the
        gate's name as detail): the worker is held somewhere the caller did not expect."""
        pending = set(gates) - set(self.gates_hit)
        while True:
            if gates and not pending:
                return Outcome("gates")
            if self.finished is not None:
                return self.finished
            left = deadline - time.monotonic()
            # poll() wakes on data or EOF: a dead worker closes its end of the pipe.
            if left <= 0 or not self._readable(left):
                if self.finished is not None:
                    return self.finished
                if time.monotonic() >= deadline:
                    return Outcome("timeout", f"the {self.spec.log_name} process gave no answer")
                continue
            gate = self._receive()
            if gate is not None:
                if allowed is not None and gate not in allowed:
                    return Outcome("stray", gate)
                pending.discard(gate)

    def drain(self) -> None:
        """Read what the worker has sent so far, without waiting for more."""
        while self.finished is None and self._readable(0):
            self._receive()

    def _readable(self, timeout: float) -> bool:
        """Whether a message (or the end of the pipe) arrives within `timeout`. An
        interrupt kills every worker from the main thread, and kill() closes the pipe
        under whichever thread waits on it: that is how the worker ended, not an error."""
        try:
            return self.conn.poll(timeout)
        except OSError:
            self.finished = Outcome("died", f"the {self.spec.log_name} process was killed")
            return False

    def _receive(self) -> str | None:
        """One message from the pipe, recorded; the gate's name when it announces one."""
        try:
            message = self.conn.recv()
        except (EOFError, OSError):
            self.finished = Outcome("died", "the worker closed its pipe without a result")
            return None
        kind = message[0]
        if kind == "gate":
            self.gates_hit.append(message[1])
            self.timeline.append(gate_event(self._now(), message[1]))
            return str(message[1])
        if kind == "trace":
            self.trace.append(message[1])
        elif kind == "ack":
            self.acks.append(message[1])
            ack = f"acknowledged {message[1]['run_id']} {message[1]['status']}"
            self.timeline.append(Event(self._now(), ack, "store", "store"))
        elif kind == "own-write":
            self.own_writes.append(str(message[1]))
            self.event(str(message[1]), "fault")
        elif kind == "done":
            self.finished = Outcome("done", results=message[1])
            self.event(f"{self.spec.log_name} done", "end")
        elif kind == "error":
            stage, where, ours = message[3:6] if len(message) > 5 else ("", None, True)
            at = f" (at {where})" if where else ""
            detail = f"{message[1]}: {message[2]}{at}"
            self.finished = Outcome("error", detail, stage=stage, by_harness=bool(ours))
            self.event(f"{self.spec.log_name} raised {message[1]}", "fault")
        return None

    def join(self, deadline: float) -> Outcome:
        """Wait for the worker's result and its exit; kill it if the deadline passes."""
        outcome = self.wait(frozenset(), deadline)
        if outcome.kind == "timeout":
            self.kill()
            return outcome
        self._reap(deadline)
        return outcome

    def release(self, name: str) -> None:
        """Let the worker past gate `name`. A worker that has already ended (its pipe
        closed) has nothing to release: that is its outcome, read by the next wait."""
        try:
            self.conn.send(("release", name))
        except (BrokenPipeError, ConnectionResetError, OSError):
            self.event(f"{self.spec.log_name} was gone before its release of {name}", "end")

    # -- signals ------------------------------------------------------------------------

    def kill(self) -> int | None:
        """SIGKILL the worker's process group and every descendant, then reap it.

        The worker called setsid() before it could announce anything, so its pgid is
        its pid; descendants that left the group are found through psutil first, while
        the parent still exists to list them.
        """
        children = descendants(self.pid)
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except ProcessLookupError:
            # Not yet a group leader (killed before its first line) or already gone.
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
        for child in children:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        self._reap()
        self.event(f"{self.spec.log_name} killed (exit {self.exitcode})", "kill")
        return self.exitcode

    def stop(self) -> None:
        self._signal_group(signal.SIGSTOP, "paused (SIGSTOP)", "pause")

    def stop_all(self, deadline: float) -> bool:
        """SIGSTOP the worker's group and wait until every thread of the worker is
        stopped (kill() returns before the target has taken the signal); False if it is
        gone, or not stopped by the deadline."""
        try:
            os.killpg(self.pid, signal.SIGSTOP)
        except ProcessLookupError:
            return False
        self.event(f"{self.spec.log_name} paused (SIGSTOP)", "pause")
        pause = 0.0002
        while not threads_stopped(self.pid):
            if time.monotonic() >= deadline:
                return False
            time.sleep(pause)  # the kernel's stop of our own child: no event to wait on
            pause = min(pause * 2, 0.01)
        return True

    def cont(self) -> None:
        self._signal_group(signal.SIGCONT, "woken (SIGCONT)", "wake")

    def _signal_group(self, sig: signal.Signals, done: str, kind: str) -> None:
        # A worker may be gone before its signal (it died of its own accord, or the
        # kernel's OOM killer took it): that is the runtime's outcome, read by the next
        # join, never an error of the harness's.
        try:
            os.killpg(self.pid, sig)
        except ProcessLookupError:
            self.event(f"{self.spec.log_name} was gone before it could be {done}", "end")
            return
        self.event(f"{self.spec.log_name} {done}", kind)

    def _reap(self, deadline: float | None = None) -> None:
        # The sentinel is readable once the forkserver has waited for the child and sent
        # its real status; waiting for that needs no lock, reading it does.
        left = None if deadline is None else max(0.0, deadline - time.monotonic())
        if not multiprocessing.connection.wait([self.proc.sentinel], left):
            # It gave its result (or closed its pipe) but does not exit: it is killed, so
            # that nothing it runs outlives its time limit.
            self.kill()
            return
        with _status_lock:
            self.proc.join()
            self.exitcode = self.proc.exitcode
        self.conn.close()
        with _live_lock:
            _live.discard(self)

    @property
    def alive(self) -> bool:
        return self.exitcode is None


def refused_fork(exc: BaseException) -> bool:
    """`Process.start()` failed as it does when the kernel refuses a fork (EAGAIN under
    `ulimit -u`, ENOMEM): the forkserver's own fork (it drops the request, so the pid
    is never written, or the request cannot be), or the parent's as it spawns one."""
    if isinstance(exc, (EOFError, BrokenPipeError, ConnectionResetError)):
        return True
    return isinstance(exc, OSError) and exc.errno in (errno.EAGAIN, errno.ENOMEM)


def threads_stopped(pid: int) -> bool:
    """Every thread of process `pid` is stopped (state T or t in /proc); False once it
    is gone (a zombie or reaped process holds nothing to copy)."""
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except FileNotFoundError:
        return False
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/stat", "rb") as f:
                stat = f.read()
        except FileNotFoundError:
            continue  # a thread that ended meanwhile
        # The state follows the command name, which is in parentheses and may hold any byte.
        if stat[stat.rindex(b")") + 2 : stat.rindex(b")") + 3] not in (b"T", b"t"):
            return False
    return True


def kill_all() -> int:
    """Kill every worker that is still registered; returns how many there were."""
    with _live_lock:
        workers = list(_live)
    for w in workers:
        with contextlib.suppress(Exception):
            w.kill()
    return len(workers)


def forkserver_pid() -> int | None:
    """This process's forkserver, if it runs."""
    from multiprocessing import forkserver

    pid = getattr(forkserver._forkserver, "_forkserver_pid", None)
    return pid if isinstance(pid, int) else None


def kill_left_behind(timeout: float = 5.0) -> int:
    """Kill every process the forkserver holds that is not a live worker: what workers
    left behind (a child in the worker's group, or one that called setsid), adopted by
    the forkserver (its subreaper), with everything they started. Returns how many."""
    pid = forkserver_pid()
    if pid is None:
        return 0
    with _status_lock:
        with _live_lock:
            workers = {w.pid for w in _live}
        adopted = [p for p in held_children(pid) if p.pid not in workers]
        doomed = [p for orphan in adopted for p in (orphan, *descendants(orphan.pid))]
        for proc in doomed:
            with contextlib.suppress(psutil.Error):
                proc.kill()
    # The forkserver reaps its own; whatever went elsewhere is gone once killed.
    psutil.wait_procs(doomed, timeout=timeout)
    return len(adopted)


def stop_forkserver(timeout: float = 10.0) -> None:
    """Stop this process's forkserver and reap it: a command's last act, so that nothing
    it started outlives it even for the moment the forkserver would take to notice its
    parent is gone. No worker can start in this process afterwards."""
    with _ctx_lock:
        if _ctx is None:
            return
        kill_left_behind()
        for child in psutil.Process().children():
            with contextlib.suppress(psutil.Error):
                if "multiprocessing.forkserver" in " ".join(child.cmdline()):
                    child.terminate()  # it forks nothing now: every worker is reaped
                    try:
                        child.wait(timeout)
                    except psutil.TimeoutExpired:
                        child.kill()
                        child.wait(timeout)
