"""The FUSE operations: every call passed through to the backing folder, and told to the model.

Served by libfuse's single-threaded loop (see server.py), so the operations run one at
a time in the order the kernel sends them; `mutex` is held across each change to the
backing folder and its record in the model, so a cut (taken from another thread) sees
both or neither.

Not implemented on purpose:
- `lock` and `flock`: without them the kernel keeps POSIX and BSD locks itself, across
  every process using the mount, which is what SQLite's locking needs (implemented in
  the server they would be the server's own locks, per handle, and wrong).
- `fsync` does not reach the backing's disk: the backing stands for the kernel's page
  cache, which a power cut loses anyway; what is durable is the model's business.
- xattrs, copy_file_range, lseek: the kernel answers ENOSYS or falls back to read/write.
"""

from __future__ import annotations

import errno
import os
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import mfusepy

from killpoint.powerloss import op_trace
from killpoint.powerloss.durable import DIR, FILE, SYMLINK, DurableTree, Node
from killpoint.powerloss.op_trace import OpTrace

STAT_FIELDS = (
    "st_mode",
    "st_nlink",
    "st_size",
    "st_uid",
    "st_gid",
    "st_ino",
    "st_blocks",
    "st_blksize",
    "st_rdev",
)
# Flags the backing open must not get: the kernel already resolved creation, and
# appends arrive with their offset (pwrite on an O_APPEND fd would ignore it on Linux).
DROPPED_FLAGS = os.O_CREAT | os.O_EXCL | os.O_APPEND
SYNC_FLAGS = os.O_SYNC | os.O_DSYNC


def _attrs(st: os.stat_result) -> dict[str, Any]:
    attrs = {name: getattr(st, name) for name in STAT_FIELDS}
    attrs["st_atime"] = st.st_atime_ns
    attrs["st_mtime"] = st.st_mtime_ns
    attrs["st_ctime"] = st.st_ctime_ns
    return attrs


class Passthrough(mfusepy.Operations):  # type: ignore[misc,unused-ignore]  # untyped where mfusepy is absent
    """Path-based operations over `backing`, recording into `tree`."""

    use_ns = True  # times in nanoseconds (mfusepy's float seconds are deprecated)
    # Operations on an open handle get no path (the handle names the file, even after
    # it is unlinked or renamed) and libfuse spends no time building one.
    flag_nopath = True
    flag_nullpath_ok = True

    def __init__(
        self,
        backing: Path,
        tree: DurableTree,
        on_ready: Callable[[], None],
        trace: OpTrace | None = None,
    ) -> None:
        self.backing = os.fsencode(backing)
        self.tree = tree
        self.mutex = threading.Lock()
        self.on_ready = on_ready
        self.trace = trace or OpTrace(lambda _message: None)
        self.handles: dict[int, Node] = {}  # backing fd -> the node it writes
        self.names: dict[int, str] = {}  # backing fd -> the path it was opened by
        self.sync_handles: set[int] = set()  # opened O_SYNC / O_DSYNC

    def _path(self, path: str) -> bytes:
        return self.backing + os.fsencode(path)

    def _traced(
        self, kind: str, file: str, run: Callable[[], Any], offset: int = 0, length: int = 0
    ) -> Any:
        """Run one counted operation; the held one stops here (op_trace.py): before it
        reaches the backing folder, then fails, or after, before its reply."""
        held = self.trace.seen(kind, file, offset, length)
        if held is not None and not held.after:
            self.trace.wait(held)
            raise mfusepy.FuseOSError(errno.EIO)
        result = run()
        if held is not None:
            self.trace.wait(held)
        return result

    # -- the mount's life -----------------------------------------------------------------

    def init_with_config(self, conn_info: Any, config: Any) -> None:
        # Called when the kernel's INIT arrives: the mount answers from here on.
        self.on_ready()

    # -- attributes and directories -------------------------------------------------------

    def getattr(self, path: str | None, fh: int | None = None) -> dict[str, Any]:
        if path is None:
            assert fh is not None
            return _attrs(os.fstat(fh))
        return _attrs(os.lstat(self._path(path)))

    def readlink(self, path: str) -> str:
        return os.fsdecode(os.readlink(self._path(path)))

    def statfs(self, path: str) -> dict[str, int]:
        st = os.statvfs(self.backing)
        return {name: getattr(st, name) for name in dir(st) if name.startswith("f_")}

    def opendir(self, path: str) -> int:
        fd = os.open(self._path(path), os.O_RDONLY | os.O_DIRECTORY)
        self.handles[fd] = self.tree.node(path)
        self.names[fd] = path.strip("/") or "."
        return fd

    def readdir(self, path: str | None, fh: int) -> list[str]:
        return [".", "..", *os.listdir(fh)]

    def releasedir(self, path: str | None, fh: int) -> int:
        self.handles.pop(fh, None)
        self.names.pop(fh, None)
        os.close(fh)
        return 0

    def fsyncdir(self, path: str | None, datasync: int, fh: int) -> int:
        def run() -> None:
            with self.mutex:
                self.tree.dir_synced(self.handles[fh])

        self._traced(op_trace.FSYNCDIR, self.names.get(fh, "?"), run)
        return 0

    # -- the namespace --------------------------------------------------------------------

    def mkdir(self, path: str, mode: int) -> int:
        with self.mutex:
            os.mkdir(self._path(path), mode)
            self.tree.created(path, DIR)
        return 0

    def rmdir(self, path: str) -> int:
        with self.mutex:
            os.rmdir(self._path(path))
            self.tree.removed(path)
        return 0

    def unlink(self, path: str) -> int:
        def run() -> None:
            with self.mutex:
                os.unlink(self._path(path))
                self.tree.removed(path)

        self._traced(op_trace.UNLINK, path.strip("/"), run)
        return 0

    def rename(self, old: str, new: str, flags: int = 0) -> int:
        if flags:  # RENAME_NOREPLACE / RENAME_EXCHANGE: callers fall back on EINVAL
            raise mfusepy.FuseOSError(errno.EINVAL)

        def run() -> None:
            with self.mutex:
                os.rename(self._path(old), self._path(new))
                self.tree.renamed(old, new)

        self._traced(op_trace.RENAME, f"{old.strip('/')} -> {new.strip('/')}", run)
        return 0

    def link(self, target: str, source: str) -> int:
        with self.mutex:
            os.link(self._path(source), self._path(target))
            self.tree.linked(source, target)
        return 0

    def symlink(self, target: str, source: str) -> int:
        with self.mutex:
            os.symlink(source, self._path(target))
            self.tree.created(target, SYMLINK, os.fsencode(source))
        return 0

    def mknod(self, path: str, mode: int, dev: int) -> int:
        with self.mutex:
            os.mknod(self._path(path), mode, dev)
            self.tree.created(path, FILE)
        return 0

    def chmod(self, path: str | None, mode: int) -> int:
        os.chmod(self._path(path or ""), mode)
        return 0

    def chown(self, path: str | None, uid: int, gid: int) -> int:
        os.chown(self._path(path or ""), uid, gid)
        return 0

    def utimens(self, path: str | None, times: tuple[int, int] | None = None) -> int:
        if times is None:
            os.utime(self._path(path or ""))
        else:
            os.utime(self._path(path or ""), ns=times)
        return 0

    # -- files ----------------------------------------------------------------------------

    def _opened(self, fd: int, node: Node, flags: int, path: str) -> int:
        self.handles[fd] = node
        self.names[fd] = path.strip("/")
        if flags & SYNC_FLAGS:
            self.sync_handles.add(fd)
        return fd

    def create(self, path: str, mode: int, flags: int = os.O_RDWR) -> int:
        with self.mutex:
            fd = os.open(self._path(path), _backing_flags(flags) | os.O_CREAT, mode)
            try:
                node = self.tree.node(path)  # O_CREAT of a name made meanwhile
            except LookupError:
                node = self.tree.created(path, FILE)
            if flags & os.O_TRUNC:
                self.tree.resized(node, 0)
            return self._opened(fd, node, flags, path)

    def open(self, path: str, flags: int) -> int:
        with self.mutex:
            fd = os.open(self._path(path), _backing_flags(flags))
            node = self.tree.node(path)
            if flags & os.O_TRUNC:
                self.tree.resized(node, 0)
            return self._opened(fd, node, flags, path)

    def read(self, path: str | None, size: int, offset: int, fh: int) -> bytes:
        return os.pread(fh, size, offset)

    def write(self, path: str | None, data: bytes, offset: int, fh: int) -> int:
        def run() -> int:
            with self.mutex:
                n = os.pwrite(fh, data, offset)
                node = self.handles[fh]
                self.tree.wrote(node, offset, data[:n])
                if fh in self.sync_handles:
                    self._sync(node, fh)
            return n

        file = self.names.get(fh, "?")
        return int(self._traced(op_trace.WRITE, file, run, offset, len(data)))

    def truncate(self, path: str | None, length: int, fh: int | None = None) -> int:
        def run() -> None:
            with self.mutex:
                if fh is not None:
                    os.ftruncate(fh, length)
                    node = self.handles[fh]
                else:
                    assert path is not None
                    os.truncate(self._path(path), length)
                    node = self.tree.node(path)
                self.tree.resized(node, length)

        file = self.names.get(fh, "?") if fh is not None else (path or "?").strip("/")
        self._traced(op_trace.TRUNCATE, file, run, length=length)
        return 0

    def fallocate(self, path: str | None, mode: int, offset: int, size: int, fh: int) -> int:
        if mode:  # KEEP_SIZE, PUNCH_HOLE...: not modelled, refused
            raise mfusepy.FuseOSError(errno.EOPNOTSUPP)
        with self.mutex:
            os.posix_fallocate(fh, offset, size)
            self.tree.changed(self.handles[fh], offset, offset + size)
        return 0

    def fsync(self, path: str | None, datasync: int, fh: int) -> int:
        # fdatasync and fsync are one rule: the model keeps no times.
        def run() -> None:
            with self.mutex:
                self._sync(self.handles[fh], fh)

        kind = op_trace.FDATASYNC if datasync else op_trace.FSYNC
        self._traced(kind, self.names.get(fh, "?"), run)
        return 0

    def _sync(self, node: Node, fd: int) -> None:
        self.tree.synced(node, os.fstat(fd).st_size, _reader(fd))

    def flush(self, path: str | None, fh: int) -> int:
        return 0

    def release(self, path: str | None, fh: int) -> int:
        self.handles.pop(fh, None)
        self.names.pop(fh, None)
        self.sync_handles.discard(fh)
        os.close(fh)
        return 0


def _backing_flags(flags: int) -> int:
    flags &= ~DROPPED_FLAGS
    if flags & os.O_ACCMODE == os.O_WRONLY:
        # A sync reads what changed back from the backing: every handle can read.
        flags = (flags & ~os.O_ACCMODE) | os.O_RDWR
    return flags


def _reader(fd: int) -> Callable[[int, int], bytes]:
    def read(offset: int, size: int) -> bytes:
        return os.pread(fd, size, offset)

    return read


class LibFuse(mfusepy.FUSE):  # type: ignore[misc,unused-ignore]
    """mfusepy's FUSE with the two libfuse 3 arguments it drops handed through: the
    handle of an ftruncate (so a truncation names its file without a path) and the
    flags of a rename (refused rather than ignored)."""

    def truncate_fuse_3(self, path: bytes | None, length: int, fip: Any) -> int:
        fh = fip.contents.fh if fip else None
        decoded = None if path is None else path.decode(self.encoding, self.errors)
        return int(self.operations.truncate(decoded, length, fh) or 0)

    def rename_fuse_3(self, old: bytes, new: bytes, flags: int) -> int:
        return int(
            self.operations.rename(
                old.decode(self.encoding, self.errors),
                new.decode(self.encoding, self.errors),
                flags,
            )
            or 0
        )
