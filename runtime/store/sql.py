"""The store's statements, written once as SQL that SQLite and PostgreSQL both accept.

Why text and not Core expressions: SQLAlchemy caches a compiled statement per engine,
and a crash-tested worker always has a fresh engine. Compiling a Core UPDATE on a new
engine costs milliseconds, a text statement microseconds; building the Core
expression again on every call costs more than executing it. The tables themselves
stay in `schema` (Core), and the column lists below are taken from there.
"""

from __future__ import annotations

from sqlalchemy import Table, TextClause, text

from . import schema


def _columns(table: Table) -> list[str]:
    return [c.name for c in table.columns]


def _insert(table: Table) -> TextClause:
    names = _columns(table)
    placeholders = ", ".join(f":{n}" for n in names)
    return text(f"INSERT INTO {table.name} ({', '.join(names)}) VALUES ({placeholders})")


RUN_COLUMNS = _columns(schema.runs)
_RUN = f"SELECT {', '.join(RUN_COLUMNS)} FROM kp_runs WHERE run_id = :run_id"

TABLES_EXIST = {
    "sqlite": text("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = :name"),
    "postgresql": text("SELECT 1 WHERE to_regclass(:name) IS NOT NULL"),
}
# PostgreSQL only. Advisory locks are database-wide: keyed by the schema too, so that
# stores in other schemas of one database (killpoint's cells) never wait on each other.
CREATE_LOCK = text("SELECT pg_advisory_xact_lock(727274, hashtext(current_schema()))")
INSERT_META = text("INSERT INTO kp_meta (key, value) VALUES (:key, :value)")

# -- sessions ------------------------------------------------------------------------------

SESSION_STATE = text("SELECT state FROM kp_sessions WHERE session_id = :session_id")
SESSION = text(
    "SELECT session_id, agent_name, state, created_at, updated_at "
    "FROM kp_sessions WHERE session_id = :session_id"
)
INSERT_SESSION = _insert(schema.sessions)
UPDATE_SESSION_STATE = text(
    "UPDATE kp_sessions SET state = :state, updated_at = :updated_at WHERE session_id = :session_id"
)
SESSION_RUN_IDS = text(
    "SELECT run_id FROM kp_runs WHERE session_id = :session_id ORDER BY created_at, run_id"
)
LATEST_RUN_START = text("SELECT max(created_at) FROM kp_runs WHERE session_id = :session_id")
# Messages of the session's runs with the given status that started before a moment.
HISTORY = text(
    "SELECT m.body FROM kp_run_messages m JOIN kp_runs r ON r.run_id = m.run_id "
    "WHERE r.session_id = :session_id AND r.status = :status AND r.created_at < :before "
    "ORDER BY r.created_at, r.run_id, m.idx"
)

# -- runs ----------------------------------------------------------------------------------

RUN = text(_RUN)
RUN_FOR_UPDATE = text(f"{_RUN} FOR UPDATE")  # PostgreSQL: lock the row while claiming it
MESSAGES = text("SELECT body FROM kp_run_messages WHERE run_id = :run_id ORDER BY idx")
EXECUTIONS = text(
    f"SELECT {', '.join(_columns(schema.tool_executions))} FROM kp_tool_executions "
    "WHERE run_id = :run_id ORDER BY turn, call_index"
)
CHECKPOINTS = text("SELECT checkpoints FROM kp_runs WHERE run_id = :run_id")
LEASE = text(
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
UPDATE_RUN = text(_UPDATE_RUN.format(""))
# The same, recording a cancel request: an earlier request wins (NULL < n is NULL, so a
# run without one takes the new value).
_EARLIER_CANCEL = "CASE WHEN cancel_after < :cancel_after THEN cancel_after ELSE :cancel_after END"
UPDATE_RUN_CANCEL = text(_UPDATE_RUN.format(f", cancel_after = {_EARLIER_CANCEL}"))
REQUEST_CANCEL = text(f"UPDATE kp_runs SET cancel_after = {_EARLIER_CANCEL} WHERE run_id = :run_id")

TAKE = text(
    "UPDATE kp_runs SET version = :new_version, owner = :owner, owner_host = :owner_host, "
    "owner_pid = :owner_pid, owner_started = :owner_started, "
    "lease_expires_at = :lease_expires_at, updated_at = :updated_at "
    "WHERE run_id = :run_id AND version = :version"
)
RENEW_LEASE = text(
    "UPDATE kp_runs SET lease_expires_at = :lease_expires_at "
    "WHERE run_id = :run_id AND version = :version AND owner = :owner"
)
DROP_MESSAGES_FROM = text("DELETE FROM kp_run_messages WHERE run_id = :run_id AND idx >= :idx")
DROP_EXECUTIONS_AFTER = text(
    "DELETE FROM kp_tool_executions WHERE run_id = :run_id AND turn > :turn"
)
