"""The store's durability settings, read back from a connection rather than trusted.

What makes a commit durable is a setting of the store, and what a runtime passes is not
always what applies: a PRAGMA that another layer sets afterwards, a connection made by
another path, a server or a role configured otherwise. An adapter reads them here from the
runtime's own connection (killpoint.adapters.checkpoint_gates.CheckpointGates.settings
puts them in the run's history), and killpoint.judge.durability says which fall short.

SQLite: `synchronous` (OFF, NORMAL, FULL, EXTRA; per connection) and `journal_mode`
(per database file). PostgreSQL: `synchronous_commit` and `fsync`, each with where its
value comes from (`..._source`: "session" when the connection or its role set it, "server"
when the server's configuration did).
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, text

SQLITE_SYNCHRONOUS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}
PG_SETTINGS = ("synchronous_commit", "fsync")
# pg_settings.source values that mean the server's own configuration, not the client's.
PG_SERVER_SOURCES = frozenset(
    {"default", "configuration file", "command line", "environment variable", "override"}
)

_PG_QUERY = text("SELECT name, setting, source FROM pg_settings WHERE name IN :names").bindparams(
    bindparam("names", expanding=True)
)


def read_settings(connection: Any) -> dict[str, str]:
    """The settings that decide whether a commit survives a power cut, as `connection` (a
    SQLAlchemy Connection of the runtime's own engine) has them."""
    dialect = connection.dialect.name
    if dialect == "sqlite":
        level = connection.exec_driver_sql("PRAGMA synchronous").scalar()
        mode = connection.exec_driver_sql("PRAGMA journal_mode").scalar()
        return {
            "synchronous": SQLITE_SYNCHRONOUS.get(int(level), str(level)),
            "journal_mode": str(mode).lower(),
        }
    if dialect == "postgresql":
        found: dict[str, str] = {}
        for name, setting, source in connection.execute(_PG_QUERY, {"names": list(PG_SETTINGS)}):
            found[str(name)] = str(setting)
            found[f"{name}_source"] = "server" if source in PG_SERVER_SOURCES else "session"
        return found
    return {}


__all__ = ["PG_SETTINGS", "SQLITE_SYNCHRONOUS", "read_settings"]
