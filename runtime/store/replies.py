"""The reply journal: each model reply that asked for tools, durable before its tools run.

Why: a model asked the same turn twice does not answer the same way. It re-issues the
calls under new call ids, in another order, spelled otherwise, or plans again. A worker
killed while a batch ran leaves that batch's effects done and, until the batch's checkpoint
lands, no durable trace of the reply that asked for them; a resume that asks the model
again then runs whatever the second answer says, and an effect keyed on anything the model
made up (its call id, the call's place in the batch) happens twice. With the reply journaled,
the resumed turn takes the reply the effects came from: the same calls, ids and arguments,
so the same idempotency keys, and nothing is asked twice.

One row per reply, keyed by (run, message index); the first written wins (a resume reuses
the row rather than writing another). The write is its own short transaction, outside the
checkpoints, which neither count it nor wait for it. A reply the journal missed (the store
unavailable for that write, or a kill between the model's answer and the write) is asked
again, as without a journal: the window narrows to one write, it does not close.
"""

from __future__ import annotations

import json

from sqlalchemy.exc import SQLAlchemyError

from ..messages import Message, Usage
from . import schema, sql
from .store import Store

_INSERT = sql.Statement(
    "INSERT INTO kp_replies (run_id, idx, body, usage) VALUES (:run_id, :idx, :body, :usage) "
    "ON CONFLICT (run_id, idx) DO NOTHING"
)
_READ = sql.Statement(
    "SELECT idx, body, usage FROM kp_replies WHERE run_id = :run_id AND idx >= :idx ORDER BY idx"
)


class ReplyJournal:
    """The journal of one store. Stores made before it existed get the table on first use."""

    def __init__(self, store: Store) -> None:
        self.store = store

    def save(self, run_id: str, idx: int, message: Message, usage: Usage) -> bool:
        """Journal the reply the run takes at message `idx`; False when the store refused
        the write (the reply is then asked again after a crash, as without a journal)."""
        try:
            self._ensure()
            with self.store.writing() as conn:
                _INSERT.run(
                    conn,
                    {
                        "run_id": run_id,
                        "idx": idx,
                        "body": message.to_json(),
                        "usage": json.dumps(usage.to_dict(), sort_keys=True),
                    },
                )
        except SQLAlchemyError:
            return False
        return True

    def read(self, run_id: str, since: int) -> dict[int, tuple[Message, Usage]]:
        """The run's journaled replies from message index `since` on."""
        if not self.store.has_table(schema.replies.name):
            return {}
        with self.store.reading() as conn:
            rows = _READ.run(conn, {"run_id": run_id, "idx": since}).all()
        return {
            int(row.idx): (Message.from_json(row.body), Usage(**json.loads(row.usage)))
            for row in rows
        }

    def _ensure(self) -> None:
        self.store.create_schema()
        if self.store.has_table(schema.replies.name):
            return
        with self.store.writing() as conn:
            if self.store.dialect == "postgresql":
                conn.execute(sql.CREATE_LOCK)  # two workers creating it would race
            schema.replies.create(conn, checkfirst=True)


__all__ = ["ReplyJournal"]
