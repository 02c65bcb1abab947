"""The processes that serve power-loss mounts: one helper per engine process, which forks
one server per mount.

Why processes, and why forked from a helper (figures in docs/powerloss.md):
- libfuse's loop installs handlers for SIGINT, SIGTERM and SIGHUP for its whole
  process: in the engine it would take Ctrl-C away from the campaign. And a mount whose
  server dies with the engine (SIGKILL) stays in /proc/mounts, every access failing
  with ENOTCONN; a server process of its own notices the engine's death and unmounts.
- A thread in the engine would also share the GIL with the engine's cell threads.
- A fresh interpreter per mount costs 130-240 ms here (mfusepy's import alone runs
  `ldconfig -p` to find libfuse); a fork of a helper that imported it once costs a few.
  The helper is single-threaded, so forking it is safe (the engine is not: cells run
  in threads).

Each server runs libfuse's single-threaded loop in its main thread (the GIL would
serialise the operations anyway, and a single thread ends without libfuse cancelling
threads that are inside Python) and a control thread that answers its owner over a
SOCK_SEQPACKET socket, one JSON message per packet:
    owner -> server   {"cut": IMAGE, "model": {"name": ..., "seed": ...}}
                      {"mark": K} | {"arm": N, "after": BOOL} | {"drop": true}
                      {"ops": true, "from": I}
    server -> owner   {"ready": true} | {"report": {...}} | {"error": TEXT}
                      {"marked": K} | {"armed": N} | {"ops": [...], "more": BOOL}
                      {"held": OP, "after": BOOL}  (unasked: the armed operation arrived)
(op_trace.py: marks, holds and the recorded operations; a drop has no answer.)
The owner unmounts; the loop then ends and the server exits, which closes its socket:
the owner's wait for the end is a read of that socket, never a sleep. When the owner's
end closes without an unmount (the engine died), the server detaches the mount lazily
and exits once the last file in it is closed.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import socket
import sys
import threading
import traceback
from pathlib import Path
from typing import Any

PACKET = 1 << 20  # the largest message (a cut report of a folder of a few thousand files)
OPS_PAGE = 2000  # recorded operations per message (each well under 200 bytes of JSON)


def send(sock: socket.socket, message: dict[str, Any]) -> None:
    sock.send(json.dumps(message).encode())


def receive(sock: socket.socket) -> dict[str, Any] | None:
    """The next message, or None when the other end has closed."""
    data = sock.recv(PACKET)
    return json.loads(data) if data else None


# -- one mount ----------------------------------------------------------------------------


def serve(backing: Path, mountpoint: Path, log: Path, control: socket.socket) -> int:
    """Mount `backing` at `mountpoint` and serve it until it is unmounted (in a forked
    server process); returns the exit status."""
    # libfuse and mfusepy write to stderr (mount errors, operations that raised): the log.
    fd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    os.dup2(fd, 2)
    os.close(fd)
    sys.stderr = os.fdopen(2, "w", buffering=1, closefd=False)
    from killpoint.powerloss.durable import DurableTree
    from killpoint.powerloss.op_trace import OpTrace
    from killpoint.powerloss.passthrough import LibFuse, Passthrough

    tree = DurableTree.from_folder(backing)
    trace = OpTrace(lambda message: send(control, message))
    ops = Passthrough(backing, tree, on_ready=lambda: send(control, {"ready": True}), trace=trace)
    threading.Thread(target=_control, args=(ops, mountpoint, control), daemon=True).start()
    try:
        LibFuse(
            ops,
            str(mountpoint),
            foreground=True,
            nothreads=True,
            # An unlinked file that is still open is unlinked for real (libfuse would
            # rename it to .fuse_hidden* instead: a rename the model would record).
            hard_remove=True,
            fsname="killpoint-powerloss",
            subtype="killpoint",
            # Keep the page cache across opens (SQLite opens the store for every new
            # connection): nothing changes the backing folder but this mount, so what
            # the kernel cached is never stale.
            kernel_cache=True,
        )
    except BaseException as exc:  # the mount failed: say why, on the log and to the owner
        traceback.print_exc()
        reason = _last_lines(log) or f"{type(exc).__name__}: {exc}"
        with contextlib.suppress(OSError):  # the owner may be gone already
            send(control, {"error": reason})
        return 1
    return 0


def _last_lines(log: Path, n: int = 5) -> str:
    try:
        lines = log.read_text(errors="replace").strip().splitlines()
    except OSError:
        return ""
    useful = [line for line in lines if line.startswith(("fuse:", "fusermount"))]
    return "; ".join((useful or lines)[-n:])


def _control(ops: Any, mountpoint: Path, control: socket.socket) -> None:
    from killpoint.powerloss.umount import unmount

    while True:
        try:
            message = receive(control)
        except OSError:
            message = None
        if message is None:
            # The owner is gone (killed, or it closed without unmounting): nobody will
            # unmount for it. Detach now (the mount leaves the tree at once); the loop
            # ends when the last process holding a file in it closes that file.
            # An OSError: already unmounted by the owner, and the loop is ending anyway.
            with contextlib.suppress(OSError):
                unmount(mountpoint, lazy=True)
            return
        try:
            _answer(ops, control, message)
        except Exception as exc:  # said to the owner; the control thread lives on
            with contextlib.suppress(OSError):
                send(control, {"error": f"{type(exc).__name__}: {exc}"})


def _answer(ops: Any, control: socket.socket, message: dict[str, Any]) -> None:
    if "mark" in message:
        ops.trace.mark(int(message["mark"]))
        send(control, {"marked": message["mark"]})
    elif "history" in message:
        ops.trace.record_into(str(message["history"]))
        send(control, {"recording": message["history"]})
    elif "arm" in message:
        ops.trace.arm(int(message["arm"]), bool(message.get("after")))
        send(control, {"armed": message["arm"]})
    elif "ops" in message:
        # A page at a time: a baseline's operations outgrow one packet (large-output).
        start = int(message.get("from") or 0)
        recorded = ops.trace.ops()
        page = [op.to_json() for op in recorded[start : start + OPS_PAGE]]
        send(control, {"ops": page, "more": start + OPS_PAGE < len(recorded)})
    elif "drop" in message:
        ops.trace.drop()
    elif "cut" in message:
        try:
            report = _cut(ops, Path(message["cut"]), message.get("model") or {"name": "synced"})
            send(control, {"report": report})
        except Exception as exc:
            send(control, {"error": f"{type(exc).__name__}: {exc}"})


def _cut(ops: Any, image: Path, model: dict[str, Any]) -> dict[str, Any]:
    from killpoint.powerloss.cut_models import from_json

    # Under the operations' lock: no write is half applied to the backing and the model.
    with ops.mutex:
        sizes: dict[str, int] = {}
        base = os.fsdecode(ops.backing)
        for folder, _dirs, files in os.walk(base):
            rel = os.path.relpath(folder, base)
            for name in files:
                path = name if rel == "." else f"{rel}/{name}"
                try:
                    sizes[path] = os.lstat(os.path.join(folder, name)).st_size
                except OSError:
                    continue

        def read_live(path: str) -> bytes:
            with open(os.path.join(base, path), "rb") as f:
                return f.read()

        return ops.tree.write_image(image, sizes, from_json(model), read_live).to_json()


# -- the helper ---------------------------------------------------------------------------


def helper_main(control_fd: int) -> None:
    """Fork a server for each mount request, until the engine's end of `control` closes.

    Request: {"mount": [backing, mountpoint, log]} with the mount's own control socket
    passed along (SCM_RIGHTS); answer: {"pid": PID}."""
    import mfusepy  # noqa: F401  (once here, not in every server: it looks for libfuse)

    from killpoint.powerloss import durable, passthrough  # noqa: F401

    # Servers are reaped by the kernel: the helper never waits for them (their owner
    # learns of their end from its socket).
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    # Ctrl-C in a terminal reaches the whole foreground group: the engine decides.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    control = socket.socket(fileno=control_fd)
    while True:
        try:
            data, fds, _flags, _addr = socket.recv_fds(control, PACKET, 1)
        except OSError:
            data, fds = b"", []
        if not data:
            os._exit(0)  # the engine is gone; servers watch their own owners
        backing, mountpoint, log = json.loads(data)["mount"]
        pid = os.fork()
        if pid == 0:
            control.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            mount_control = socket.socket(fileno=fds[0])
            os._exit(serve(Path(backing), Path(mountpoint), Path(log), mount_control))
        for fd in fds:
            os.close(fd)  # the server's end is the server's alone: EOF means it exited
        send(control, {"pid": pid})
