"""Who holds SQLite's locks on a database file, read from the kernel (/proc/locks).

SQLite's unix VFS takes its locks as POSIX record locks (fcntl) on bytes of the database
file past the first gigabyte: the pending byte, the reserved byte after it, and a range of
510 shared bytes after that (sqlite3.c, `PENDING_BYTE`, `RESERVED_BYTE`, `SHARED_FIRST`).
The kernel lists every record lock with its owner's pid, so which process holds which of
SQLite's lock levels on a file is a reading, not an inference. In rollback-journal mode a
process that holds SHARED keeps every writer from committing; the writer holds PENDING
meanwhile, which keeps every new reader out too.

WAL mode is another matter: every open connection keeps SHARED on the database file for
as long as it is open (so that nobody turns WAL off under it), and that blocks nobody's
write. A writer there takes the WAL's write lock, a byte of the `-shm` file. `blockers`
reads what keeps another process from writing in whichever mode the file is.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

PENDING_BYTE = 0x40000000
RESERVED_BYTE = PENDING_BYTE + 1
SHARED_FIRST = PENDING_BYTE + 2
SHARED_SIZE = 510
PROC_LOCKS = Path("/proc/locks")
# Strongest first: a process that holds several locks on the file is at the strongest.
LEVELS = ("EXCLUSIVE", "PENDING", "RESERVED", "SHARED")
# The `-shm` file's lock bytes start after two copies of the index header (48 bytes each)
# and the checkpoint info's first 24; the first of them is the WAL's write lock.
WAL_WRITE_BYTE = 120
WAL_DMS_BYTE = 128  # after the 8 lock bytes: held (read) by every open connection
WAL_WRITE = "WAL write lock"


@dataclass(frozen=True)
class Holder:
    pid: int
    level: str  # one of LEVELS

    def __str__(self) -> str:
        return f"pid {self.pid} holds {self.level}"


def _level(kind: str, start: int, end: int) -> str | None:
    """SQLite's lock level that one record lock (`kind` READ or WRITE over the bytes
    start..end) stands for, or None for a lock outside SQLite's bytes."""
    if start <= SHARED_FIRST and end >= SHARED_FIRST + SHARED_SIZE - 1:
        return "EXCLUSIVE" if kind == "WRITE" else "SHARED"
    if start <= RESERVED_BYTE <= end and kind == "WRITE":
        return "RESERVED"
    # A READ lock on the pending byte is held only for the moment SHARED is acquired.
    if start <= PENDING_BYTE <= end and kind == "WRITE":
        return "PENDING"
    return None


def _device(st: os.stat_result) -> str:
    return f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"


def _records(text: str, device: str) -> Iterator[tuple[str, int, int, int]]:
    """Each POSIX record lock held on the file `device` names: kind, pid, start, end."""
    for line in text.splitlines():
        # "1: POSIX  ADVISORY  READ 4242 00:1a:12345 1073741826 1073742335"; a waiter's
        # line is marked "->" and holds nothing yet.
        fields = line.split()
        if "->" in fields or len(fields) < 8 or fields[1] != "POSIX" or fields[5] != device:
            continue
        end = PENDING_BYTE * 4 if fields[7] == "EOF" else int(fields[7])
        yield fields[3], int(fields[4]), int(fields[6]), end


def holders(path: str | os.PathLike[str], table: str | None = None) -> list[Holder]:
    """Each process holding one of SQLite's locks on the database file at `path`, at its
    strongest level, by pid. `table`: /proc/locks as text (read from the kernel when
    None). A file that does not exist, or a kernel without /proc/locks, has none."""
    try:
        st = os.stat(path)
        text = PROC_LOCKS.read_text(encoding="ascii") if table is None else table
    except OSError:
        return []
    found: dict[int, str] = {}
    for kind, pid, start, end in _records(text, _device(st)):
        level = _level(kind, start, end)
        if level is None:
            continue
        have = found.get(pid)
        if have is None or LEVELS.index(level) < LEVELS.index(have):
            found[pid] = level
    return [Holder(pid, level) for pid, level in sorted(found.items())]


def blockers(path: str | os.PathLike[str], table: str | None = None) -> list[Holder]:
    """The processes whose locks keep any other from writing the database at `path`. In
    rollback-journal mode that is every holder (a reader's SHARED keeps a writer from
    committing). In WAL mode it is whoever holds RESERVED or stronger on the file (an
    exclusive locking mode) or the WAL's write lock on the `-shm` file."""
    try:
        text = PROC_LOCKS.read_text(encoding="ascii") if table is None else table
    except OSError:
        return []
    found = holders(path, text)
    try:
        shm = list(_records(text, _device(os.stat(f"{os.fspath(path)}-shm"))))
    except OSError:
        shm = []
    # Every connection to a WAL database holds a read lock on the `-shm` file's byte after
    # its lock bytes for as long as it is open; a `-shm` file left over from an earlier WAL
    # use has none. (Reading the file's header instead would open and close the database
    # file in this process, and closing any descriptor of a file drops every POSIX lock
    # the process holds on it: an engine's own connection to the store would lose its.)
    if not any(start <= WAL_DMS_BYTE <= end for _, _, start, end in shm):
        return found
    strong = [h for h in found if h.level != "SHARED"]
    have = {h.pid for h in strong}
    writing = {
        pid
        for kind, pid, start, end in shm
        if kind == "WRITE" and start <= WAL_WRITE_BYTE <= end and pid not in have
    }
    return strong + [Holder(pid, WAL_WRITE) for pid in sorted(writing)]


__all__ = ["LEVELS", "WAL_WRITE", "Holder", "blockers", "holders"]
