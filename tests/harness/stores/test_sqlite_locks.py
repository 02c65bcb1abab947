"""holders: SQLite's lock levels on a file, read from /proc/locks, by pid. blockers: those
of them that keep another process from writing, in rollback-journal and in WAL mode."""

# ruff: noqa: SIM300

from __future__ import annotations

import os
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from killpoint.stores.sqlite_locks import WAL_WRITE, Holder, blockers, holders

pytestmark = pytest.mark.skipif(not Path("/proc/locks").exists(), reason="no /proc/locks")


@pytest.fixture
def db(tmp_path: Path) -> Iterator[tuple[str, sqlite3.Connection]]:
    path = str(tmp_path / "store.db")
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES (1)")
    yield path, conn
    conn.close()


def test_each_level_a_transaction_takes_is_read_with_its_pid(
    db: tuple[str, sqlite3.Connection],
) -> None:
    path, conn = db
    assert [] == holders(path)

    conn.execute("BEGIN")
    conn.execute("SELECT * FROM t").fetchall()
    assert [Holder(os.getpid(), "SHARED")] == holders(path)
    conn.execute("COMMIT")

    conn.execute("BEGIN IMMEDIATE")
    assert [Holder(os.getpid(), "RESERVED")] == holders(path)
    conn.execute("COMMIT")

    conn.execute("BEGIN EXCLUSIVE")
    assert [Holder(os.getpid(), "EXCLUSIVE")] == holders(path)
    conn.execute("COMMIT")
    assert [] == holders(path)


def test_only_the_file_asked_about(db: tuple[str, sqlite3.Connection], tmp_path: Path) -> None:
    path, _ = db
    other = sqlite3.connect(str(tmp_path / "other.db"), isolation_level=None)
    other.execute("CREATE TABLE t (x)")
    other.execute("BEGIN IMMEDIATE")
    try:
        assert [] == holders(path)
        assert [Holder(os.getpid(), "RESERVED")] == holders(tmp_path / "other.db")
    finally:
        other.execute("COMMIT")
        other.close()


def test_a_table_of_several_processes_waiters_and_other_locks(tmp_path: Path) -> None:
    path = tmp_path / "store.db"
    path.write_bytes(b"")
    st = os.stat(path)
    dev = f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}"
    table = "\n".join(
        [
            f"1: POSIX  ADVISORY  READ 101 {dev} 1073741826 1073742335",
            f"2: POSIX  ADVISORY  WRITE 102 {dev} 1073741824 1073741824",
            f"2: POSIX  ADVISORY  READ 102 {dev} 1073741826 1073742335",
            f"2: -> POSIX  ADVISORY  WRITE 103 {dev} 1073741826 1073742335",
            f"3: POSIX  ADVISORY  WRITE 104 {dev} 0 EOF",
            f"4: FLOCK  ADVISORY  WRITE 105 {dev} 0 EOF",
            "5: POSIX  ADVISORY  READ 106 00:00:1 1073741826 1073742335",
        ]
    )
    # 104's lock over the whole file covers the shared range: EXCLUSIVE. 103 only waits,
    # 105's is a flock and 106's is on another file.
    assert [
        Holder(101, "SHARED"),
        Holder(102, "PENDING"),
        Holder(104, "EXCLUSIVE"),
    ] == holders(path, table)


def test_a_missing_file_has_no_holders(tmp_path: Path) -> None:
    assert [] == holders(tmp_path / "absent.db")


def test_a_reader_blocks_writers_in_rollback_journal_mode(
    db: tuple[str, sqlite3.Connection],
) -> None:
    path, conn = db
    conn.execute("BEGIN")
    conn.execute("SELECT * FROM t").fetchall()
    try:
        assert [Holder(os.getpid(), "SHARED")] == blockers(path)
    finally:
        conn.execute("COMMIT")
    assert [] == blockers(path)


def test_in_wal_mode_an_open_connection_blocks_nobody_and_a_writer_does(tmp_path: Path) -> None:
    path = str(tmp_path / "wal.db")
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("CREATE TABLE t (x)")
        # Every open connection keeps SHARED on the file in WAL mode; no writer waits on it.
        assert [Holder(os.getpid(), "SHARED")] == holders(path)
        assert [] == blockers(path)

        conn.execute("BEGIN IMMEDIATE")
        conn.execute("INSERT INTO t VALUES (1)")
        assert [Holder(os.getpid(), WAL_WRITE)] == blockers(path)
        conn.execute("COMMIT")
        assert [] == blockers(path)
    finally:
        conn.close()
