"""The operations a mount counts, per checkpoint mark, and the one it holds: through the
kernel, with a real process writing and a real SIGKILL (fs-op points)."""

# ruff: noqa: SIM300

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from killpoint.powerloss import PowerLossFS
from killpoint.powerloss.op_trace import TracedOp

# A writer that marks where it stands on stdout and waits for a line on stdin between
# its two phases: the test marks a checkpoint there, as the engine does at a gate.
WRITER = textwrap.dedent(
    """
    import os, sys
    folder = sys.argv[1]
    fd = os.open(os.path.join(folder, "a"), os.O_RDWR | os.O_CREAT, 0o644)
    os.pwrite(fd, b"x" * 100, 0)
    os.fsync(fd)
    print("phase", flush=True)
    sys.stdin.readline()
    os.pwrite(fd, b"y" * 10, 100)
    os.pwrite(fd, b"z" * 5, 4096)
    os.fdatasync(fd)
    os.ftruncate(fd, 50)
    os.rename(os.path.join(folder, "a"), os.path.join(folder, "b"))
    os.unlink(os.path.join(folder, "b"))
    os.close(fd)
    print("done", flush=True)
    """
)


def writer(folder: Path) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", WRITER, str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )


def step(proc: subprocess.Popen[str], expect: str) -> None:
    assert proc.stdout is not None
    assert expect == proc.stdout.readline().strip()


def test_operations_are_counted_per_mark_and_in_order(cell: Path) -> None:
    with PowerLossFS(cell / "backing", cell / "store") as fs:
        fs.mark(1)
        proc = writer(fs.mountpoint)
        step(proc, "phase")
        fs.mark(2)
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        step(proc, "done")
        assert 0 == proc.wait()
        ops = fs.ops()
        fs.unmount()
    assert [
        TracedOp(1, 0, "write", "a", 0, 100),
        TracedOp(1, 1, "fsync", "a"),
        TracedOp(2, 0, "write", "a", 100, 10),
        TracedOp(2, 1, "write", "a", 4096, 5),
        TracedOp(2, 2, "fdatasync", "a"),
        TracedOp(2, 3, "truncate", "a", 0, 50),
        TracedOp(2, 4, "rename", "a -> b"),
        TracedOp(2, 5, "unlink", "b"),
    ] == ops


def held_run(cell: Path, n: int, *, after: bool) -> tuple[TracedOp, bytes]:
    """The writer killed at operation n of its second phase; the backing file after."""
    with PowerLossFS(cell / "backing", cell / "store") as fs:
        fs.mark(1)
        proc = writer(fs.mountpoint)
        step(proc, "phase")
        fs.mark(2)
        fs.arm(n, after=after)
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
        held = fs.wait_held(time.monotonic() + 30)
        assert held is not None
        # The writer's thread waits for the reply uninterruptibly: SIGKILL, then the drop
        # lets it die without running another line of its own.
        os.kill(proc.pid, signal.SIGKILL)
        fs.drop()
        assert -signal.SIGKILL == proc.wait()
        assert proc.stdout is not None
        assert "" == proc.stdout.read()  # it never printed "done"
        fs.unmount()
    return held, (cell / "backing" / "a").read_bytes()


def test_an_operation_held_before_never_reaches_the_backing_folder(cell: Path) -> None:
    held, data = held_run(cell, 1, after=False)
    assert TracedOp(2, 1, "write", "a", 4096, 5) == held
    assert b"x" * 100 + b"y" * 10 == data  # the write before it landed, it did not


def test_an_operation_held_after_has_reached_the_backing_folder(cell: Path) -> None:
    held, data = held_run(cell, 1, after=True)
    assert TracedOp(2, 1, "write", "a", 4096, 5) == held
    assert 4101 == len(data) and data.endswith(b"z" * 5)


def test_a_held_truncation_leaves_the_file_as_it_was(cell: Path) -> None:
    held, data = held_run(cell, 3, after=False)
    assert "truncate" == held.kind
    assert 4101 == len(data)


def test_more_operations_than_one_message_holds_are_all_read(cell: Path) -> None:
    """The owner reads the operations page by page (a large store's baseline outgrows
    one packet, 1 MB): 15,000 writes, some 1.4 MB of JSON, every one, in order."""
    with PowerLossFS(cell / "backing", cell / "store") as fs:
        fd = os.open(fs.mountpoint / "big", os.O_RDWR | os.O_CREAT, 0o644)
        try:
            for i in range(15000):
                os.pwrite(fd, b"w", i)
        finally:
            os.close(fd)
        ops = fs.ops()
        fs.unmount()
    assert list(range(15000)) == [op.offset for op in ops]
    assert {("write", "big")} == {(op.kind, op.file) for op in ops}
