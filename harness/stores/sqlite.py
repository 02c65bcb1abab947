"""The embedded store: one SQLite file in each cell's folder."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence
from pathlib import Path

from sqlalchemy.engine import make_url

FILE = "store.db"


class SqliteStores:
    kind = "sqlite"
    # A file on this machine: no call waits on a server, so none needs a thread to keep
    # its deadline (killpoint.engine.cell_run.CellRun.call).
    embedded = True

    def shown(self) -> str:
        return "sqlite"

    def check(self) -> None:
        return None  # a writable work folder is checked with the work folder

    def fresh(self, work: Path) -> str:
        return f"sqlite:///{work / FILE}"

    def drop(self, url: str) -> None:
        return None  # the file goes with its cell's folder

    def keep(self, url: str, work: Path) -> None:
        return None  # the file is in the folder

    def with_lock_timeout(self, url: str, seconds: float) -> str:
        # The reference store and sqlite3 both read `timeout` (seconds) from the URL.
        return (
            make_url(url)
            .update_query_dict({"timeout": str(seconds)})
            .render_as_string(hide_password=False)
        )

    def tables(self, url: str) -> tuple[str, ...]:
        return ()  # one lock covers the whole file, tables to come included

    def hold_write_lock(self, url: str, tables: Sequence[str] = ()) -> Callable[[], None]:
        # Taken on one thread, released on another (a cell's calls into its store each
        # run under a deadline, killpoint.engine.deadline); never used by two at once.
        conn = sqlite3.connect(path_of(url), isolation_level=None, check_same_thread=False)
        conn.execute("BEGIN IMMEDIATE")

        def release() -> None:
            conn.execute("ROLLBACK")
            conn.close()

        return release


def path_of(url: str) -> str:
    """The file a SQLite store URL names."""
    return make_url(url).database or ""


__all__ = ["FILE", "SqliteStores", "path_of"]
