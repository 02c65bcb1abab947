"""PowerLossFS: a folder on the power-loss filesystem, and the cut that leaves its durable image.

    with PowerLossFS(backing=cell / "store-backing", mountpoint=cell / "store") as fs:
        ...  # workers write the store under cell/store; the engine reads it there
        ...  # kill and reap every worker
        report = fs.cut()  # the power goes now: the durable image is taken
        ...  # close the engine's own connections to the store (a close may write)
        fs.unmount()  # cell/store now holds the durable image; report.files says what it lost

The mount is served by a process of its own (server.py), forked by a helper that this
process starts once. Nothing outlives its owner: `close()` (and leaving the `with`
block, on any exception) unmounts, lazily when a file is still open; if this process
dies, the server sees its socket close and unmounts by itself.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from killpoint.errors import CutError, ImageExists, MountBusy, MountFailed
from killpoint.powerloss.cut_models import CutModel, parse_cut
from killpoint.powerloss.cut_report import CutReport
from killpoint.powerloss.op_trace import TracedOp
from killpoint.powerloss.server import PACKET, receive, send
from killpoint.powerloss.umount import holders, unmount


class _Helper:
    """The process that forks mount servers (server.helper_main), started on first use."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._proc: subprocess.Popen[bytes] | None = None

    def fork_server(self, backing: Path, mountpoint: Path, log: Path, theirs: socket.socket) -> int:
        with self._lock:
            if self._proc is None or self._proc.poll() is not None:
                self._start()
            assert self._sock is not None
            request = json.dumps({"mount": [str(backing), str(mountpoint), str(log)]})
            socket.send_fds(self._sock, [request.encode()], [theirs.fileno()])
            answer = receive(self._sock)
            if answer is None:
                raise MountFailed(
                    f"killpoint: the power-loss mount helper exited; its log is {log}"
                )
            return int(answer["pid"])

    def _start(self) -> None:
        ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        # Our end is close-on-exec (Python's default), so no other child of this
        # process holds it: when this process dies, the helper reads EOF and exits.
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "killpoint.powerloss", str(theirs.fileno())],
            pass_fds=(theirs.fileno(),),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            start_new_session=True,  # Ctrl-C and a killed process group spare the mounts
        )
        theirs.close()
        self._sock = ours

    def stop(self) -> None:
        """Close the helper's socket and reap it (servers already forked live on)."""
        with self._lock:
            if self._sock is not None:
                self._sock.close()
                self._sock = None
            if self._proc is not None:
                # It exits as soon as it reads EOF: it does nothing else between requests.
                self._proc.wait()
                self._proc = None


_helper = _Helper()
atexit.register(_helper.stop)


def stop_helper() -> None:
    """Stop this process's mount helper (a command's last act, like stop_forkserver)."""
    _helper.stop()


OTHERS_GRACE = 2.0  # seconds another process's open file may take to go


class PowerLossFS:
    """`backing` mounted at `mountpoint` through the power-loss filesystem.

    Everything in `backing` at mount time counts as durable. `log` receives the
    server's own errors (default: beside the mountpoint, `<name>.fuse.log`)."""

    def __init__(
        self,
        backing: Path,
        mountpoint: Path,
        *,
        log: Path | None = None,
        timeout: float = 30.0,
    ) -> None:
        self.backing = Path(backing).absolute()
        self.mountpoint = Path(mountpoint).absolute()
        self.log = log or self.mountpoint.with_name(self.mountpoint.name + ".fuse.log")
        self.timeout = timeout
        self.report: CutReport | None = None
        self._default_image: Path | None = None
        self.backing.mkdir(parents=True, exist_ok=True)
        self.mountpoint.mkdir(parents=True, exist_ok=True)
        if any(self.mountpoint.iterdir()):
            raise MountFailed(
                f"killpoint: mountpoint {str(self.mountpoint)!r} is not empty; give an empty "
                "folder (the store's files belong in the backing folder)"
            )
        self._sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            self.server_pid = _helper.fork_server(self.backing, self.mountpoint, self.log, theirs)
        finally:
            theirs.close()  # the server's copy is its own; ours would hide its exit
        self.mounted = True
        answer = self._answer("mounting")
        if "ready" not in answer:
            if "no answer" in str(answer.get("error")):
                # Silent, not exited (its socket is open, so the pid is its own): end it
                # rather than leave a mount that may still come up behind the error.
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.server_pid, signal.SIGKILL)
                with contextlib.suppress(OSError):
                    unmount(self.mountpoint, lazy=True)
            self._sock.close()
            self.mounted = False
            raise MountFailed(
                f"killpoint: cannot mount the power-loss filesystem at {str(self.mountpoint)!r}: "
                f"{answer.get('error', answer)} (server log: {self.log})"
            )

    def __repr__(self) -> str:
        return f"PowerLossFS(backing={str(self.backing)!r}, mountpoint={str(self.mountpoint)!r})"

    def __enter__(self) -> PowerLossFS:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _answer(self, doing: str) -> dict[str, object]:
        """The server's next message; {"error": ...} when it ends or stays silent."""
        ready, _, _ = select.select([self._sock], [], [], self.timeout)
        if not ready:
            return {"error": f"no answer from the server within {self.timeout} s while {doing}"}
        try:
            answer = receive(self._sock)
        except OSError as exc:
            answer = None
            return {"error": f"the server's socket failed while {doing}: {exc}"}
        if answer is None:
            return {"error": f"the server exited while {doing}"}
        return answer

    # -- the cut ------------------------------------------------------------------------

    def cut(self, image: Path | None = None, *, model: CutModel | str | None = None) -> CutReport:
        """The power goes now: write the image into `image` (a new folder) and return what
        each file and each unsynced operation kept. Kill and reap the processes writing
        the store first: a write still in flight is either before the cut or after it,
        whole.

        Without `image`, the image is staged beside the mountpoint and moved into it by
        `unmount()`, so the store's path reads the image afterwards. `model`: which of
        the operations made since the last syncs land (killpoint.powerloss.cut_models; a
        name such as "torn-seq" takes seed 0); default `synced`, none of them.

        The mount stays up and passes I/O through (a connection closing may still write:
        that is after the cut and changes nothing in the image)."""
        if not self.mounted:
            raise CutError(f"killpoint: {self!r} is not mounted; cut before unmounting")
        if self.report is not None:
            raise CutError(f"killpoint: {self!r} was already cut; one cut per mount")
        if model is None or isinstance(model, str):
            model = parse_cut(model or "synced")
        if image is None:
            image = self.mountpoint.with_name(self.mountpoint.name + ".image")
            self._default_image = image
        image = Path(image).absolute()
        if image.exists():
            raise ImageExists(f"killpoint: the image folder {str(image)!r} exists; give a new path")
        send(self._sock, {"cut": str(image), "model": model.to_json()})
        answer = self._answer("cutting")
        if "report" not in answer:
            raise CutError(f"killpoint: the cut failed: {answer.get('error', answer)}")
        self.report = CutReport.from_json(answer["report"])  # type: ignore[arg-type]
        return self.report

    # -- the operations: marks, a held one (op_trace.py) ---------------------------------

    def mark(self, checkpoint: int) -> None:
        """Operations from now on belong to `checkpoint`, numbered from 0."""
        self._ask({"mark": checkpoint}, "marked", "marking a checkpoint")

    def arm(self, n: int, *, after: bool = False) -> None:
        """Hold the Nth operation after the current mark: before it reaches the backing
        folder, or with `after`, once it has and before its reply."""
        self._ask({"arm": n, "after": after}, "armed", "arming a hold")

    def ops(self) -> list[TracedOp]:
        """Every operation counted so far, in order."""
        found: list[TracedOp] = []
        while True:
            answer = self._ask({"ops": True, "from": len(found)}, "ops", "reading the operations")
            page = answer["ops"]
            assert isinstance(page, list)
            found += [TracedOp.from_json(op) for op in page]
            if not answer.get("more") or not page:
                return found

    def wait_held(self, deadline: float, also: Sequence[Any] = ()) -> TracedOp | None:
        """Wait for the armed operation to be held: it, or None when one of `also`
        (objects with fileno()) becomes readable first or the deadline passes."""
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                return None
            ready, _, _ = select.select([self._sock, *also], [], [], left)
            if not ready:
                return None
            if self._sock not in ready:
                return None
            answer = receive(self._sock)
            if answer is None:
                raise CutError("killpoint: the power-loss server exited while holding")
            if "held" in answer:
                return TracedOp.from_json(answer["held"])

    def drop(self) -> None:
        """Let the held operation go: failed if it was held before the backing saw it."""
        send(self._sock, {"drop": True})

    def _ask(self, message: dict[str, Any], key: str, doing: str) -> dict[str, object]:
        if not self.mounted:
            raise CutError(f"killpoint: {self!r} is not mounted")
        send(self._sock, message)
        answer = self._answer(doing)
        if key not in answer:
            raise CutError(f"killpoint: {doing} failed: {answer.get('error', answer)}")
        return answer

    # -- unmounting -----------------------------------------------------------------------

    def unmount(self) -> Path:
        """Unmount and wait for the server to exit; returns the mountpoint. After a cut
        without an `image`, the mountpoint then holds the durable image.

        MountBusy names the processes that still hold a file in the mount: close them
        first (for a SQLite store, the engine's pooled connections). Files this process
        holds are waited for until `timeout` (another thread may be closing them)."""
        if self.mounted:
            deadline = time.monotonic() + self.timeout
            # Another process's file: a child between its fork and its exec holds every
            # descriptor of ours for an instant, so it too is given a moment.
            grace = time.monotonic() + min(OTHERS_GRACE, self.timeout)
            pause = 0.001
            while True:
                try:
                    unmount(self.mountpoint)
                    break
                except MountBusy as exc:
                    held = holders(self.mountpoint)
                    # Files this process holds may be closing in another of its threads (a
                    # pooled connection checked in after its pool was disposed): wait for
                    # them, up to the deadline; another process's file is not ours to wait on.
                    own = f"{os.getpid()} ("
                    others = [h for h in held if not h.startswith(own)]
                    now = time.monotonic()
                    if (others and now >= grace) or now >= deadline:
                        raise MountBusy(
                            exc.errno,
                            f"killpoint: cannot unmount {str(self.mountpoint)!r}: files are open "
                            f"in it ({'; '.join(held) or 'none found'}; this process is "
                            f"{os.getpid()}); close them (engines, connection pools) before "
                            "unmount()",
                        ) from None
                # No process holds a file: the kernel keeps the mount busy until the server
                # has answered the RELEASE of files closed just now (FUSE sends it
                # asynchronously, after close() and after a killed worker is reaped).
                time.sleep(pause)
                pause = min(pause * 2, 0.05)
            self._wait_exit()
        self._install()
        return self.mountpoint

    def close(self) -> None:
        """Unmount whatever happens and wait for the server to exit; files still open in
        the mount fail from then on. Safe to call twice."""
        if not self.mounted:
            return
        try:
            unmount(self.mountpoint)
        except MountBusy:
            # Detached from the tree at once; the filesystem would live on until its last
            # file is closed, so end it now: the server's socket is still open, so the
            # server is alive and its pid its own. The kernel aborts the connection and
            # the files still open fail from here on (ECONNABORTED, ENOTCONN).
            unmount(self.mountpoint, lazy=True)
            # The last file may have closed between the two unmounts: the server then
            # ends on its own (seen in campaigns as ESRCH here).
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.server_pid, signal.SIGKILL)
        except OSError:
            # Not mounted any more (unmounted behind our back): the server is ending.
            pass
        self._wait_exit()

    def _wait_exit(self) -> None:
        # The server's socket is closed by nothing but the server's exit (the helper
        # closed its copy right after forking): EOF is the end, without polling pids.
        deadline = time.monotonic() + self.timeout
        while True:
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._sock], [], [], max(left, 0))
            if not ready:
                # Detached but never let go: some process still holds a file in it. The
                # socket is still open, so the server is alive and its pid is its own.
                with contextlib.suppress(ProcessLookupError):
                    os.kill(self.server_pid, signal.SIGKILL)
                break
            try:
                if not self._sock.recv(PACKET):
                    break
            except OSError:
                break
        self._sock.close()
        self.mounted = False

    def _install(self) -> None:
        image, self._default_image = self._default_image, None
        if image is None or not image.exists():
            return
        for entry in image.iterdir():
            entry.rename(self.mountpoint / entry.name)
        shutil.rmtree(image)
