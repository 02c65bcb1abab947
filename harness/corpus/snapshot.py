"""A state kept and given back: the store as the kill left it, the ledger, the scripted
model's state.

The SQLite store is copied with SQLite's online backup from a connection opened after
the worker's death: it holds every transaction that had committed, whether in the main
file or still in the WAL, and nothing of one that had not (a resumer's own open
recovers the WAL the same way and ignores frames without a commit). A byte copy of the
file and its -wal could race a checkpoint that another connection of the engine's runs
as it closes; the backup reads one consistent snapshot. The copy is one self-contained
file: a resumer finds the same rows, in the same schema, at the same page format.

A PostgreSQL store (a schema per cell) is kept as a dump of its schema and restored into
the checking cell's fresh schema (killpoint.corpus.pg_state).
"""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

from killpoint.corpus import pg_state
from killpoint.stores import kind_of_url
from killpoint.stores.sqlite import path_of
from killpoint.workers.worker import LEDGER, MODEL_STATE

STORE = "store.db"


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
    bytes kept."""
    dest.mkdir(parents=True, exist_ok=True)
    if kind_of_url(url) == "postgresql":
        pg_state.dump(url, dest / pg_state.DUMP)
    elif Path(db := path_of(url)).exists():
        _backup(db, dest / STORE)
    if (work / LEDGER).exists():
        shutil.copyfile(work / LEDGER, dest / LEDGER)
    if (work / MODEL_STATE).is_dir():
        shutil.copytree(work / MODEL_STATE, dest / MODEL_STATE, dirs_exist_ok=True)
    return size(dest)


def restore(state: Path, work: Path, url: str) -> None:
    """Put a kept state where a fresh worker of `work` looks: the store at `url`, the
    ledger and the model's state in `work`."""
    if kind_of_url(url) == "postgresql":
        if (state / pg_state.DUMP).exists():
            pg_state.restore(state / pg_state.DUMP, url)
    elif (state / STORE).exists():
        _backup(str(state / STORE), Path(path_of(url)))
    if (state / LEDGER).exists():
        shutil.copyfile(state / LEDGER, work / LEDGER)
    if (state / MODEL_STATE).is_dir():
        shutil.copytree(state / MODEL_STATE, work / MODEL_STATE, dirs_exist_ok=True)


def size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


__all__ = ["STORE", "keep", "restore", "size"]
