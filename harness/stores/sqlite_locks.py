"""Who holds SQLite's locks on a database file, read from the kernel (/proc/locks).

SQLite's unix VFS takes its locks as POSIX record locks (fcntl) on bytes of the database
file past the first gigabyte: the pending byte, the reserved byte after it, and a range of
510 shared bytes after that (sqlite3.c, `PENDING_BYTE`, `RESERVED_BYTE`, `SHARED_FIRST`).
The kernel lists every record lock with its owner's pid, so which process holds which of
SQLite's lock levels on a file is a reading, not an inference. In rollback-journal mode a
process that holds SHARED keeps every writer from committing; the writer holds PENDING
meanwhile, which keeps every new reader out too. WAL mode takes its read and write locks
on the `-shm` file instead; those are not read here.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

PENDING_BYTE = 0x40000000
RESERVED_BYTE = PENDING_BYTE + 1
SHARED_FIRST = PENDING_BYTE + 2
SHARED_SIZE = 510
PROC_LOCKS = Path("/proc/locks")
# Strongest first: a process that holds several locks on the file is at the strongest.
LEVELS = ("EXCLUSIVE", "PENDING", "RESERVED", "SHARED")


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


def holders(path: str | os.PathLike[str], table: str | None = None) -> list[Holder]:
    """Each process holding one of SQLite's locks on the database file at `path`, at its
    strongest level, by pid. `table`: /proc/locks as text (read from the kernel when
    None). A file that does not exist, or a kernel without /proc/locks, has none."""
    try:
        st = os.stat(path)
        text = PROC_LOCKS.read_text(encoding="ascii") if table is None else table
    except OSError:
        return []
    device = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    found: dict[int, str] = {}
    for line in text.splitlines():
        # "1: POSIX  ADVISORY  READ 4242 00:1a:12345 1073741826 1073742335"; a waiter's
        # line is marked "->" and holds nothing yet.
        fields = line.split()
        if "->" in fields or len(fields) < 8 or fields[1] != "POSIX":
            continue
        kind, pid, where, start, end = fields[3], fields[4], fields[5], fields[6], fields[7]
        if where != device:
            continue
        level = _level(kind, int(start), PENDING_BYTE * 4 if end == "EOF" else int(end))
        if level is None:
            continue
        have = found.get(int(pid))
        if have is None or LEVELS.index(level) < LEVELS.index(have):
            found[int(pid)] = level
    return [Holder(pid, level) for pid, level in sorted(found.items())]


__all__ = ["LEVELS", "Holder", "holders"]
