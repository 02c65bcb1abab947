"""Where DBOS keeps a killpoint store's runs: the system database URL and schema DBOS is
given for a store URL, and the attribute that names a workflow's session. Shared by the
driver (agent.py), the gates (writes.py) and the reads (reading.py), and importing none
of them.
"""

from __future__ import annotations

from sqlalchemy.engine import make_url

from killpoint.errors import StoreNotSupported
from killpoint.stores.postgresql import is_postgres, schema_of

# The workflow attribute that carries the session id (DBOS has no session of its own).
SESSION_ATTRIBUTE = "killpoint_session"


def system_database_url(store_url: str) -> str:
    """DBOS's system database for a killpoint store URL. SQLite: the same file, without
    the URL's query (DBOS sets its own busy timeout on every connection: see
    `declined_kinds`). PostgreSQL: the same URL, whose options select the cell's schema for
    killpoint's counter table (DBOS qualifies its own tables with `system_schema`)."""
    url = make_url(store_url)
    if is_postgres(store_url):
        return url.set(drivername="postgresql+psycopg").render_as_string(hide_password=False)
    if url.get_backend_name() != "sqlite":
        raise StoreNotSupported(
            f"killpoint: the pydantic-ai adapter keeps DBOS's system database on SQLite or "
            f"PostgreSQL, got a {url.get_backend_name()!r} store; run with --store sqlite or "
            "a postgresql+psycopg:// URL"
        )
    return f"sqlite:///{url.database}"


def system_schema(store_url: str) -> str | None:
    """The schema DBOS keeps its tables in: the cell's own on PostgreSQL (None: SQLite)."""
    if not is_postgres(store_url):
        return None
    return schema_of(store_url) or "dbos"


__all__ = [
    "SESSION_ATTRIBUTE",
    "StoreNotSupported",
    "is_postgres",
    "system_database_url",
    "system_schema",
]
