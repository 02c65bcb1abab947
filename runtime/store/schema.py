"""Tables of the reference runtime's store (SQLAlchemy Core)."""

from __future__ import annotations

from sqlalchemy import (
    Column,
    Float,
    ForeignKey,
    Integer,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
)

SCHEMA_VERSION = "1"

metadata = MetaData()

meta = Table(
    "kp_meta",
    metadata,
    Column("key", String(64), primary_key=True),
    Column("value", Text, nullable=False),
)

sessions = Table(
    "kp_sessions",
    metadata,
    Column("session_id", String(128), primary_key=True),
    Column("agent_name", String(256), nullable=False),
    Column("state", Text, nullable=False),  # JSON object
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
)

runs = Table(
    "kp_runs",
    metadata,
    Column("run_id", String(128), primary_key=True),
    Column("session_id", String(128), ForeignKey("kp_sessions.session_id"), nullable=False),
    Column("agent_name", String(256), nullable=False),
    Column("mode", String(16), nullable=False),
    Column("status", String(16), nullable=False),
    Column("input", Text, nullable=False),  # JSON string
    Column("content", Text),  # JSON string or NULL
    Column("error", Text),  # JSON string or NULL
    Column("usage", Text, nullable=False),  # JSON object
    Column("pending_confirmations", Text, nullable=False),  # JSON list of call ids
    Column("last_checkpoint_at_message_index", Integer, nullable=False),
    Column("checkpoints", Integer, nullable=False),  # durable writes so far
    # A cancel asked for while the run was in flight (see runtime.cancellation): a worker
    # that resumes the run after a crash must honour it, so it cannot live only in the
    # dead worker's memory. NULL: none; n: cancel once the run has more than n messages.
    Column("cancel_after", Integer),
    # Ownership: compare-and-swap on version; a live lease keeps other resumers out.
    Column("version", Integer, nullable=False),
    Column("owner", String(64)),
    Column("owner_host", String(256)),
    Column("owner_pid", Integer),
    Column("owner_started", Float),
    Column("lease_expires_at", Float),
    Column("created_at", Float, nullable=False),
    Column("updated_at", Float, nullable=False),
)

run_messages = Table(
    "kp_run_messages",
    metadata,
    Column("run_id", String(128), ForeignKey("kp_runs.run_id"), nullable=False),
    Column("idx", Integer, nullable=False),
    Column("body", Text, nullable=False),  # Message.to_json()
    PrimaryKeyConstraint("run_id", "idx"),
)

tool_executions = Table(
    "kp_tool_executions",
    metadata,
    Column("run_id", String(128), ForeignKey("kp_runs.run_id"), nullable=False),
    Column("call_id", String(256), nullable=False),
    Column("turn", Integer, nullable=False),
    Column("call_index", Integer, nullable=False),
    Column("name", String(256), nullable=False),
    Column("arguments", Text, nullable=False),  # JSON string of the model's argument text
    Column("result", Text, nullable=False),  # JSON string
    Column("status", String(16), nullable=False),
    Column("idempotency_key", String(512), nullable=False),
    PrimaryKeyConstraint("run_id", "call_id"),
)

# Each model reply that asked for tools, written before its batch runs and outside any
# checkpoint (replies.py): a run resumed before that batch's checkpoint landed takes the
# reply from here instead of asking the model again. Not part of the run's state: nothing
# reads it but a resume, and a checkpoint never waits for it.
replies = Table(
    "kp_replies",
    metadata,
    Column("run_id", String(128), nullable=False),
    Column("idx", Integer, nullable=False),  # the message index the reply takes in the run
    Column("body", Text, nullable=False),  # Message.to_json()
    Column("usage", Text, nullable=False),  # JSON object: the reply's own usage
    PrimaryKeyConstraint("run_id", "idx"),
)
