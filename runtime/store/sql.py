"""The store's statements, written once as SQL that SQLite and PostgreSQL both accept.

Why text and not Core expressions: SQLAlchemy caches a compiled statement per engine,
and a crash-tested worker always has a fresh engine. Compiling a Core UPDATE on a new
engine costs milliseconds, a text statement about a hundred microseconds; building the
Core expression again on every call costs more than executing it. So each statement is
a `Statement`, handed to the driver as it is (`Connection.exec_driver_sql`): SQLite's
text is the SQL itself (`:name` is sqlite3's own parameter style), PostgreSQL's is
rendered for psycopg once per process. No statement is compiled per engine, and none
per call. The tables themselves stay in `schema` (Core), and the column lists below are
taken from there.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, CursorResult, Table, text
from sqlalchemy.dialects.postgresql import psycopg

from . import schema


class Statement:
    """One statement of the store, run by the driver without SQLAlchemy compiling it."""

    def __init__(self, sql: str) -> None:
        self.sql = sql
        self._postgresql: str | None = None

    def __repr__(self) -> str:
        return f"Statement({self.sql!r})"

    def text_for(self, dialect: str) -> str:
        """The statement in the driver's own parameter style."""
        if dialect == "sqlite":
            return self.sql
        if self._postgresql is None:
            # psycopg's style (%(name)s, a literal % doubled): what SQLAlchemy itself sends.
            compiled = text(self.sql).compile(dialect=psycopg.dialect())
            self._postgresql = str(compiled)
        return self._postgresql

    def run(self, conn: Connection, params: Any = None) -> CursorResult[Any]:
        """Execute on `conn` (a list of parameter dicts: once per dict)."""
        return conn.exec_driver_sql(self.text_for(conn.dialect.name), params)


def _columns(table: Table) -> list[str]:
    return [c.name for c in table.columns]


def _insert(table: Table) -> Statement:
    names = _columns(table)
    placeholders = ", ".join(f":{n}" for n in names)
    return Statement(f"INSERT INTO {table.name} ({', '.join(names)}) VALUES ({placeholders})")


RUN_COLUMNS = _columns(schema.runs)
_RUN = f"SELECT {', '.join(RUN_COLUMNS)} FROM kp_runs WHERE run_id = :run_id"

# The runtime's tables that exist (one query for all of them: the schema is checked once).
TABLES = {
    "sqlite": Statement("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'kp_%'"),
    "postgresql": Statement(
        "SELECT table_name FROM information_schema.tables "
        "WHERE table_schema = current_schema() AND table_name LIKE 'kp_%'"
    ),
}
# PostgreSQL only. Advisory locks are database-wide: keyed by the schema too, so that
# stores in other schemas of one database (killpoint's cells) never wait on each other.
CREATE_LOCK = text("SELECT pg_advisory_xact_lock(727274, hashtext(current_schema()))")
INSERT_META = Statement("INSERT INTO kp_meta (key, value) VALUES (:key, :value)")

# -- sessions ------------------------------------------------------------------------------

SESSION_STATE = Statement("SELECT state FROM kp_sessions WHERE session_id = :session_id")
SESSION = Statement(
    "SELECT session_id, agent_name, state, created_at, updated_at "
    "FROM kp_sessions WHERE session_id = :session_id"
)
INSERT_SESSION = _insert(schema.sessions)
UPDATE_SESSION_STATE = Statement(
    "UPDATE kp_sessions SET state = :state, updated_at = :updated_at WHERE session_id = :session_id"
)
SESSION_RUN_IDS = Statement(
    "SELECT run_id FROM kp_runs WHERE session_id = :session_id ORDER BY created_at, run_id"
)
LATEST_RUN_START = text("SELECT max(created_at) FROM kp_runs WHERE session_id = :session_id")
# Messages of the session's runs with the given status that started before a moment.
HISTORY = Statement(
    "SELECT m.body FROM kp_run_messages m JOIN kp_runs r ON r.run_id = m.run_id "
    "WHERE r.session_id = :session_id AND r.status = :status AND r.created_at < :before "
    "ORDER BY r.created_at, r.run_id, m.idx"
)

# -- runs ----------------------------------------------------------------------------------

RUN = Statement(_RUN)
RUN_FOR_UPDATE = Statement(f"{_RUN} FOR UPDATE")  # PostgreSQL: lock the row while claiming it
MESSAGES = Statement("SELECT body FROM kp_run_messages WHERE run_id = :run_id ORDER BY idx")
EXECUTIONS = Statement(
    f"SELECT {', '.join(_columns(schema.tool_executions))} FROM kp_tool_executions "
    "WHERE run_id = :run_id ORDER BY turn, call_index"
)
CHECKPOINTS = Statement("SELECT checkpoints FROM kp_runs WHERE run_id = :run_id")
LEASE = Statement(
    "SELECT lease_expires_at FROM kp_runs "
    "WHERE run_id = :run_id AND version = :version AND owner = :owner"
)

INSERT_RUN = _insert(schema.runs)
INSERT_MESSAGE = _insert(schema.run_messages)
INSERT_EXECUTION = _insert(schema.tool_executions)

# A checkpoint's compare-and-swap: only the owner, at the version it last wrote.
_UPDATE_RUN = (
    "UPDATE kp_runs SET status = :status, content = :content, error = :error, "
    "usage = :usage, pending_confirmations = :pending_confirmations, "
    "last_checkpoint_at_message_index = :last_checkpoint_at_message_index, "
    "checkpoints = :checkpoints, owner = :owner, owner_host = :owner_host, "
    "owner_pid = :owner_pid, owner_started = :owner_started, "
    "lease_expires_at = :lease_expires_at, updated_at = :updated_at, version = :version{} "
    "WHERE run_id = :run_id AND version = :expected_version AND owner = :writer"
)
UPDATE_RUN = Statement(_UPDATE_RUN.format(""))
# The same, recording a cancel request: an earlier request wins (NULL < n is NULL, so a
# run without one takes the new value).
_EARLIER_CANCEL = "CASE WHEN cancel_after < :cancel_after THEN cancel_after ELSE :cancel_after END"
UPDATE_RUN_CANCEL = Statement(_UPDATE_RUN.format(f", cancel_after = {_EARLIER_CANCEL}"))
REQUEST_CANCEL = Statement(
    f"UPDATE kp_runs SET cancel_after = {_EARLIER_CANCEL} WHERE run_id = :run_id"
)

TAKE = Statement(
    "UPDATE kp_runs SET version = :new_version, owner = :owner, owner_host = :owner_host, "
    "owner_pid = :owner_pid, owner_started = :owner_started, "
    "lease_expires_at = :lease_expires_at, updated_at = :updated_at "
    "WHERE run_id = :run_id AND version = :version"
)
RENEW_LEASE = Statement(
    "UPDATE kp_runs SET lease_expires_at = :lease_expires_at "
    "WHERE run_id = :run_id AND version = :version AND owner = :owner"
)
DROP_MESSAGES_FROM = Statement("DELETE FROM kp_run_messages WHERE run_id = :run_id AND idx >= :idx")
DROP_EXECUTIONS_AFTER = Statement(
    "DELETE FROM kp_tool_executions WHERE run_id = :run_id AND turn > :turn"
)
