"""A state kept and given back: the store as the kill left it, the ledger, the scripted
model's state.

The SQLite store is copied with SQLite's online backup from a connection opened after
the worker's death: it holds every transaction that had committed, whether in the main
file or still in the WAL, and nothing of one that had not (a resumer's own open
recovers the WAL the same way and ignores frames without a commit). A byte copy of the
file and its -wal could race a checkpoint that another connection of the engine's runs
as it closes; the backup reads one consistent snapshot. The copy is one self-contained
file: a resumer finds the same rows, in the same schema, at the same page format, and a
check gives it back as a byte copy (the corpus's file is never opened by SQLite, which
could write beside it).

A PostgreSQL store (a schema per cell) is kept as data, its tables' rows and definitions
(killpoint.corpus.pg_state), and restored into the checking cell's fresh schema by
statements killpoint writes itself.

A state's folder holds only the files named here; what it holds is surveyed before any
of it is read or copied (killpoint.corpus.files: no link, no device, each file and the
state within their limits), and a recording holds itself to the same limits.
"""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from killpoint.corpus import files, pg_form, pg_state
from killpoint.errors import CorpusError
from killpoint.stores import kind_of_url
from killpoint.stores.sqlite import path_of
from killpoint.workers.worker import LEDGER, MODEL_STATE

STORE = "store.db"
STATE_JSON = "state.json"
# What may stand at the top of a state's folder (the model's state is a folder of files).
NAMES = frozenset({STATE_JSON, STORE, pg_form.FILE, LEDGER, MODEL_STATE})
# SQLite's own files beside a store someone opened to look at (a read leaves a -shm): a
# check reads the store alone, as recorded, and never these.
BESIDE_STORE = frozenset({f"{STORE}-wal", f"{STORE}-shm", f"{STORE}-journal"})


def _backup(source: str, target: Path) -> None:
    # Not read-only: a WAL file without its -shm needs a connection that may rebuild it.
    src = sqlite3.connect(source)
    try:
        dst = sqlite3.connect(target)
        try:
            src.backup(dst)
        finally:
            dst.close()
    finally:
        src.close()


def keep(work: Path, url: str, dest: Path) -> int:
    """Copy the store at `url` and the cell's ledger and model state into `dest`; the
    bytes kept. CorpusError or PgStateError when they pass what a corpus may hold."""
    dest.mkdir(parents=True, exist_ok=True)
    if kind_of_url(url) == "postgresql":
        pg_state.dump(url, dest / pg_form.FILE)
    elif Path(db := path_of(url)).exists():
        _backup(db, dest / STORE)
    if (work / LEDGER).exists():
        files.copy_file(work / LEDGER, dest / LEDGER)
    if (work / MODEL_STATE).is_dir():
        files.copy_tree(work / MODEL_STATE, dest / MODEL_STATE)
    return sum(files.survey(dest).values())  # within the state's limit, or CorpusError


def check(state: Path, store: str) -> dict[str, int]:
    """What a state's folder holds (path -> size), read as data before anything is used:
    CorpusError for a file that is not one a state holds, a link, a device, a file or a
    state over its limit, or a PostgreSQL state that is not the form (named with its line
    and field: the whole file is read and checked, nothing kept)."""
    found = files.survey(state)
    for rel in found:
        top = rel.split("/")[0]
        if top == pg_form.OLD_FILE:
            raise CorpusError(
                f"killpoint: {str(state / top)!r} is a PostgreSQL state in the SQL form of an "
                "earlier killpoint, which this one never runs (a SQL file can do anything the "
                "checking user or the server may); record the corpus again with "
                "`killpoint corpus record --store URL`"
            )
        if top in BESIDE_STORE and top == rel:
            continue
        if top not in NAMES or (top != MODEL_STATE and top != rel):
            raise CorpusError(
                f"killpoint: {str(state / rel)!r} is not a file a corpus state holds (only "
                f"{', '.join(sorted(NAMES))}); a corpus holds what `killpoint corpus record` wrote"
            )
    if store == "postgresql" and pg_form.FILE in found:
        pg_form.check(state / pg_form.FILE)
    if (store == "sqlite" and pg_form.FILE in found) or (store == "postgresql" and STORE in found):
        raise CorpusError(
            f"killpoint: state {str(state)!r} holds a store of another kind than its corpus "
            f"({store}); a corpus holds what `killpoint corpus record` wrote"
        )
    return found


def restore(state: Path, work: Path, url: str, stop: threading.Event | None = None) -> None:
    """Put a kept state where a fresh worker of `work` looks: the store at `url`, the
    ledger and the model's state in `work`. The folder is checked first (`check`); every
    copy is bounded and stops once `stop` is set (Interrupted)."""
    kind = kind_of_url(url)
    found = check(state, kind)
    if kind == "postgresql":
        if pg_form.FILE in found:
            pg_state.restore(state / pg_form.FILE, url, stop)
    elif STORE in found:
        files.copy_file(state / STORE, Path(path_of(url)), stop=stop)
    if LEDGER in found:
        files.copy_file(state / LEDGER, work / LEDGER, stop=stop)
    if any(rel.startswith(f"{MODEL_STATE}/") for rel in found):
        files.copy_tree(state / MODEL_STATE, work / MODEL_STATE, stop=stop)


__all__ = ["NAMES", "STORE", "check", "keep", "restore"]
