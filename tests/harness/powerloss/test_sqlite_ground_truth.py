"""Ground truth: plain sqlite3, in a child process writing through the mount, then the cut.

SQLite documents what each `synchronous` level promises against power loss
(https://www.sqlite.org/pragma.html#pragma_synchronous); the model must agree with it:
- FULL keeps every acknowledged commit, in WAL mode and with a rollback journal that is
  truncated or persisted at commit;
- with a journal that is deleted at commit (DELETE, the default), FULL leaves the
  unlink of the journal unsynced: a cut right after the commit finds the journal back,
  hot, and the next open rolls the commit back. EXTRA exists for exactly that ("the
  directory containing a rollback journal is synced after that journal is unlinked");
- NORMAL in WAL mode syncs the WAL only at checkpoints, OFF never: both lose the
  commits since the last synced state.
Each case commits a base (checkpointed in WAL mode), then one more row; the child
reports each commit as SQLite returns it (the acknowledgement), and is killed, parked,
right after the last one.
"""

# ruff: noqa: SIM300

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from killpoint.powerloss import PowerLossFS

CHILD = textwrap.dedent(
    """
    import sqlite3, sys
    db, journal, synchronous = sys.argv[1:4]
    c = sqlite3.connect(db, isolation_level=None)
    c.execute(f"PRAGMA journal_mode={journal}")
    c.execute(f"PRAGMA synchronous={synchronous}")
    c.execute("CREATE TABLE t(v INTEGER)")
    c.execute("INSERT INTO t VALUES (1)")
    if journal == "WAL":
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    print("ack 1", flush=True)
    c.execute("INSERT INTO t VALUES (2)")
    print("ack 2", flush=True)
    sys.stdin.read()  # parked: killed here
    """
)


def run_and_cut(cell: Path, journal: str, synchronous: str) -> tuple[set[int], str, str]:
    """The rows the image holds, its integrity_check, and the cut's summary."""
    with PowerLossFS(cell / "backing", cell / "store") as fs:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(fs.mountpoint / "s.db"), journal, synchronous],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None and child.stdin is not None
        acks = [child.stdout.readline().strip() for _ in range(2)]
        # Killed and reaped before the cut: every file it had open is closed by then.
        child.send_signal(signal.SIGKILL)
        child.wait()
        child.stdin.close()
        child.stdout.close()
        assert ["ack 1", "ack 2"] == acks
        report = fs.cut()
        fs.unmount()
    db = cell / "store" / "s.db"
    conn = sqlite3.connect(db)
    try:
        check = conn.execute("PRAGMA integrity_check").fetchone()[0]
        try:
            rows = {v for (v,) in conn.execute("SELECT v FROM t")}
        except sqlite3.OperationalError:  # no table: nothing of the store survived
            rows = set()
    finally:
        conn.close()
    return rows, check, report.summary()


@pytest.mark.parametrize(
    ("journal", "synchronous"),
    [
        ("WAL", "FULL"),
        ("WAL", "EXTRA"),
        ("TRUNCATE", "FULL"),
        ("PERSIST", "FULL"),
        ("DELETE", "EXTRA"),
    ],
)
def test_full_loses_no_acknowledged_commit(cell: Path, journal: str, synchronous: str) -> None:
    """Every acknowledged commit is in the image, and the image is sound."""
    rows, check, summary = run_and_cut(cell, journal, synchronous)

    assert ({1, 2}, "ok") == (rows, check), summary


def test_full_with_a_deleted_journal_loses_the_last_commit(cell: Path) -> None:
    """DELETE + FULL: the journal's unlink is not synced, so the cut brings it back hot
    and opening the image rolls the last commit back (what EXTRA is documented to fix)."""
    rows, check, summary = run_and_cut(cell, "DELETE", "FULL")

    assert ({1}, "ok") == (rows, check), summary
    assert "s.db-journal: restored" in summary


def test_normal_in_wal_mode_loses_the_commit_after_the_checkpoint(cell: Path) -> None:
    """WAL + NORMAL: the checkpointed base survives, the acknowledged commit after it does
    not (the WAL was not synced), and the image is sound."""
    rows, check, summary = run_and_cut(cell, "WAL", "NORMAL")

    assert ({1}, "ok") == (rows, check), summary


@pytest.mark.parametrize("journal", ["WAL", "DELETE"])
def test_off_loses_acknowledged_commits(cell: Path, journal: str) -> None:
    """OFF: nothing is ever synced, not even the directory entry of the new database:
    the acknowledged commits are gone (here, the whole store)."""
    rows, check, summary = run_and_cut(cell, journal, "OFF")

    assert (set(), "ok") == (rows, check), summary


READER = textwrap.dedent(
    """
    import sqlite3, sys
    db = sys.argv[1]
    for line in sys.stdin:  # one line per commit the writer made
        c = sqlite3.connect(db)
        print(c.execute("SELECT count(*) FROM t").fetchone()[0], flush=True)
        c.close()
    """
)


def test_a_reader_in_another_process_sees_each_commit(cell: Path) -> None:
    """WAL through the mount: a reader process sees every commit of a writer in this one as
    it lands (the -shm file is mmapped by both, through the mount's page cache)."""
    seen = []
    with PowerLossFS(cell / "backing", cell / "store") as fs:
        db = fs.mountpoint / "s.db"
        writer = sqlite3.connect(db, isolation_level=None)
        writer.execute("PRAGMA journal_mode=WAL")
        writer.execute("CREATE TABLE t(v INTEGER)")
        reader = subprocess.Popen(
            [sys.executable, "-c", READER, str(db)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert reader.stdin is not None and reader.stdout is not None
        for n in range(1, 21):
            writer.execute("INSERT INTO t VALUES (?)", (n,))
            reader.stdin.write("committed\n")
            reader.stdin.flush()
            seen.append(int(reader.stdout.readline()))
        reader.stdin.close()
        reader.wait()
        reader.stdout.close()
        writer.close()
        fs.unmount()

    assert list(range(1, 21)) == seen
