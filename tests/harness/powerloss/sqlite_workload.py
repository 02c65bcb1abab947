"""A SQLite workload for the cut models' ground truth: a child process commits through
the power-loss mount, each commit acknowledged as SQLite returns it, and is killed; the
mount is cut with a model; the image is opened and judged.

The base (commit 0) is made at synchronous=EXTRA and, in WAL mode, checkpointed, so it
is durable whatever the level under test (at FULL with a deleted journal the journal's
unlink is not synced, and the journal would come back to roll the base back); commits 1-4 are made at that level, each one
transaction inserting 40 rows (several table and index pages) and updating a counter in
another table. In WAL mode a checkpoint runs after commit 2, so commit 3 restarts the
log over frames already checkpointed: the state a checkpoint at synchronous=OFF can lose.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

from killpoint.powerloss import CutReport, PowerLossFS
from killpoint.powerloss.cut_models import CutModel

COMMITS = 4  # after the base
ROWS = 40  # per commit

CHILD = textwrap.dedent(
    f"""
    import sqlite3, sys
    db, journal, synchronous = sys.argv[1:4]
    c = sqlite3.connect(db, isolation_level=None)
    c.execute(f"PRAGMA journal_mode={{journal}}")
    c.execute("PRAGMA synchronous=EXTRA")
    c.execute("CREATE TABLE t(v INTEGER PRIMARY KEY, n INTEGER, pad TEXT)")
    c.execute("CREATE INDEX t_n ON t(n)")
    c.execute("CREATE TABLE meta(k INTEGER PRIMARY KEY, n INTEGER)")
    def commit(n):
        c.execute("BEGIN IMMEDIATE")
        for i in range({ROWS}):
            v = n * 1000 + i
            c.execute("INSERT INTO t VALUES (?, ?, ?)", (v, n, f"{{v:0200d}}"))
        c.execute("INSERT OR REPLACE INTO meta VALUES (1, ?)", (n,))
        c.execute("COMMIT")
        print(f"ack {{n}}", flush=True)
    commit(0)
    if journal == "WAL":
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    c.execute(f"PRAGMA synchronous={{synchronous}}")
    for n in range(1, {COMMITS + 1}):
        commit(n)
        if n == 2 and journal == "WAL":
            c.execute("PRAGMA wal_checkpoint(PASSIVE)")
    print("parked", flush=True)
    sys.stdin.read()  # killed here
    """
)

DURABLE, LOST, CORRUPT = "durable", "lost", "corrupt"


@dataclass(frozen=True)
class Outcome:
    """What the image holds after the cut: `check` (integrity_check's first line, or the
    error opening it raised), the commits whose rows are all there, those with some of
    their rows only (a transaction torn apart), and the counter."""

    check: str
    commits: frozenset[int]
    partial: frozenset[int]
    counter: int | None
    report: CutReport

    @property
    def verdict(self) -> str:
        """corrupt (unsound, or a commit in part, or the counter disagrees with the rows);
        lost (sound, some acknowledged commit gone); durable (every one there)."""
        if self.check != "ok" or self.partial:
            return CORRUPT
        if self.commits and self.counter != max(self.commits):
            return CORRUPT
        return DURABLE if self.commits == set(range(COMMITS + 1)) else LOST

    @property
    def prefix(self) -> bool:
        """The commits kept are the first ones (none kept after one that is gone)."""
        return self.commits == set(range(len(self.commits)))


def run_and_cut(cell: Path, journal: str, synchronous: str, model: CutModel | str) -> Outcome:
    with PowerLossFS(cell / "backing", cell / "store") as fs:
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(fs.mountpoint / "s.db"), journal, synchronous],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None and child.stdin is not None
        lines = [child.stdout.readline().strip() for _ in range(COMMITS + 2)]
        child.send_signal(signal.SIGKILL)  # parked: every commit acknowledged
        child.wait()
        child.stdin.close()
        child.stdout.close()
        assert [*(f"ack {n}" for n in range(COMMITS + 1)), "parked"] == lines, lines
        report = fs.cut(model=model)
        fs.unmount()
    return judge(cell / "store" / "s.db", report)


def judge(db: Path, report: CutReport) -> Outcome:
    if not db.exists():
        return Outcome("no database file", frozenset(), frozenset(), None, report)
    try:
        conn = sqlite3.connect(db)
    except sqlite3.Error as exc:
        return Outcome(f"{type(exc).__name__}: {exc}", frozenset(), frozenset(), None, report)
    try:
        check = str(conn.execute("PRAGMA integrity_check").fetchone()[0])
        counts = dict(conn.execute("SELECT n, count(*) FROM t GROUP BY n").fetchall())
        row = conn.execute("SELECT n FROM meta WHERE k = 1").fetchone()
    except sqlite3.DatabaseError as exc:
        return Outcome(f"{type(exc).__name__}: {exc}", frozenset(), frozenset(), None, report)
    finally:
        conn.close()
    whole = frozenset(n for n, count in counts.items() if count == ROWS)
    partial = frozenset(n for n, count in counts.items() if count != ROWS)
    return Outcome(check, whole, partial, None if row is None else int(row[0]), report)
