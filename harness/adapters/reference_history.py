"""What the reference runtime tells the run's history, in a worker: its checkpoints (with
the run, the status and the calls each makes durable), the replies it journals, the leases
it stamps, the claims it decides, and its store's durability settings.

Patched onto the runtime's classes in the worker process only (RuntimeAdapter.instrument);
the runtime itself is unchanged. Leases are read back from the store once stamped (the
claim and the heartbeat compute them inside the store's own methods); the settings are
read on the runtime's own connection once its first checkpoint has landed, never taken
from what the adapter passed.
"""

from __future__ import annotations

import functools
from typing import Any

from sqlalchemy import text
from sqlalchemy.exc import SQLAlchemyError

from killpoint.adapters.checkpoint_gates import CheckpointGates
from killpoint.runtime import Store
from killpoint.runtime.errors import RunNotContinuable, RunNotFound, RunOwnedElsewhere
from killpoint.runtime.store.replies import ReplyJournal
from killpoint.runtime.store.store import Checkpoint
from killpoint.scenarios import history
from killpoint.scenarios.conversation import canonical_arguments
from killpoint.stores.durability import read_settings

LEASE_OF = text("SELECT lease_expires_at FROM kp_runs WHERE run_id = :run_id")
REFUSED = (RunNotContinuable, RunNotFound, RunOwnedElsewhere)


def calls_of(messages: Any) -> list[list[str]]:
    """[name, canonical arguments] of every call the messages' replies ask for."""
    return [
        [c.name, canonical_arguments(c.arguments)]
        for m in messages
        if m.role == "assistant"
        for c in m.tool_calls
    ]


def checkpoint_facts(store: Store, cp: Checkpoint) -> dict[str, Any]:
    return {
        "run_id": cp.run_id,
        "status": cp.status.value,
        "calls": calls_of(cp.new_messages),
        "lease_expires_at": cp.lease_expires_at,
    }


def lease_of(store: Store, run_id: str) -> float | None:
    with store.reading() as conn:
        found = conn.execute(LEASE_OF, {"run_id": run_id}).scalar_one_or_none()
    return None if found is None else float(found)


def report_history(checkpoints: CheckpointGates) -> None:
    """Patch the runtime's store and reply journal (in this worker) to tell the history."""
    write = checkpoints.wrap(Store.write_checkpoint, facts=checkpoint_facts)
    told: set[str] = set()

    @functools.wraps(Store.write_checkpoint)
    def write_checkpoint(self: Store, cp: Checkpoint) -> int:
        version = write(self, cp)
        if self.url not in told:
            told.add(self.url)
            try:
                with self.reading() as conn:
                    checkpoints.settings(read_settings(conn))
            except SQLAlchemyError:
                told.discard(self.url)  # asked again at the next checkpoint
        return version

    claim = Store.claim

    @functools.wraps(claim)
    def claimed(self: Store, run_id: str, *args: Any, **kwargs: Any) -> Any:
        since = history.true_time()
        try:
            run = claim(self, run_id, *args, **kwargs)
        except REFUSED as exc:
            checkpoints.claim(run_id, granted=False, why=type(exc).__name__)
            raise
        checkpoints.claim(run_id, granted=True)
        stamped = lease_of(self, run_id)
        if stamped is not None:
            checkpoints.lease(run_id, stamped, by="claim", since=since)
        return run

    renew = Store.renew_lease

    @functools.wraps(renew)
    def renewed(self: Store, run_id: str, *args: Any, **kwargs: Any) -> bool:
        since = history.true_time()
        done = renew(self, run_id, *args, **kwargs)
        if done:
            stamped = lease_of(self, run_id)
            if stamped is not None:
                checkpoints.lease(run_id, stamped, by="renewal", since=since)
        return done

    save = ReplyJournal.save

    @functools.wraps(save)
    def journaled(self: ReplyJournal, run_id: str, idx: int, message: Any, usage: Any) -> bool:
        with checkpoints.durable(
            "reply", run_id=run_id, index=idx, calls=calls_of([message])
        ) as written:
            written.landed = save(self, run_id, idx, message, usage)
        return written.landed

    Store.write_checkpoint = write_checkpoint  # type: ignore[method-assign]
    Store.claim = claimed  # type: ignore[method-assign]
    Store.renew_lease = renewed  # type: ignore[method-assign]
    ReplyJournal.save = journaled  # type: ignore[method-assign]


__all__ = ["calls_of", "checkpoint_facts", "lease_of", "report_history"]
