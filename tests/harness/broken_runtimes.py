"""Deliberately broken variants of the reference runtime: the engine must catch each one.

Each variant is a runtime adapter (`tests.harness.broken_runtimes:NAME`), built from
the reference adapter with one defect swapped in.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlalchemy import delete, insert

from killpoint.adapters.reference import ReferenceAdapter, ReferenceDriver
from killpoint.runtime import Agent, RunStatus, Store
from killpoint.runtime.store import schema
from killpoint.runtime.store.store import Checkpoint, StoredRun


class EarlyCheckpointAgent(Agent):
    """A checkpoint taken before its batch finished: the calls are durable, the results not."""

    async def _run_batch(self, st: Any, batch: Any) -> None:
        if self.checkpoint != "runs":
            self._write(st, RunStatus.RUNNING)
        await super()._run_batch(st, batch)


class EagerNoTruncateStore(Store):
    """A resume that does not truncate: rows past the checkpoint survive the claim."""

    def claim(self, run_id: str, session_id: str, owner: Any, *, lease_seconds: float) -> StoredRun:
        before = self.read_run(run_id)
        run = super().claim(run_id, session_id, owner, lease_seconds=lease_seconds)
        extra = before.messages[len(run.messages) :] if before else []
        if extra:
            with self.writing() as conn:
                conn.execute(
                    insert(schema.run_messages),
                    [
                        {"run_id": run_id, "idx": len(run.messages) + n, "body": m.to_json()}
                        for n, m in enumerate(extra)
                    ],
                )
            run.messages = run.messages + extra
        return run


class EagerMessagesAgent(Agent):
    """Writes each model reply as soon as it arrives, outside any checkpoint; paired
    with a store that keeps those rows on resume."""

    async def _run_batch(self, st: Any, batch: Any) -> None:
        if st.version is not None and st.persisted == len(st.messages) - 1:
            with self.db.writing() as conn:
                conn.execute(
                    insert(schema.run_messages).values(
                        run_id=st.run_id, idx=len(st.messages) - 1, body=batch.to_json()
                    )
                )
            st.persisted += 1  # the next checkpoint writes only what follows
        await super()._run_batch(st, batch)


class SplitCheckpointStore(Store):
    """A checkpoint split over two transactions: the run row first, its rows after."""

    def write_checkpoint(self, cp: Checkpoint) -> int:
        version = super().write_checkpoint(replace(cp, new_messages=[], new_tool_executions=[]))
        with self.writing() as conn:
            self.append_rows(conn, cp)
        return version


class RestartingStore(Store):
    """A resume that re-runs finished batches: it keeps only the user's input."""

    def claim(self, run_id: str, session_id: str, owner: Any, *, lease_seconds: float) -> StoredRun:
        run = super().claim(run_id, session_id, owner, lease_seconds=lease_seconds)
        with self.writing() as conn:
            conn.execute(
                delete(schema.run_messages).where(
                    schema.run_messages.c.run_id == run_id, schema.run_messages.c.idx >= 1
                )
            )
            conn.execute(
                delete(schema.tool_executions).where(schema.tool_executions.c.run_id == run_id)
            )
        run.messages = run.messages[:1]
        run.tool_executions = []
        return run


class CompletedEarlyStore(Store):
    """RUNNING written as COMPLETED (the worker still holds the run)."""

    def write_checkpoint(self, cp: Checkpoint) -> int:
        if cp.status is RunStatus.RUNNING:
            cp = replace(cp, status=RunStatus.COMPLETED)
        return super().write_checkpoint(cp)


class SilentFinalWriteAgent(Agent):
    """A final write that fails silently: the caller hears COMPLETED, the store never does."""

    def _write(self, st: Any, status: RunStatus, **kwargs: Any) -> None:
        if status.terminal:
            try:
                raise OSError("disk full")
            except OSError:
                return
        super()._write(st, status, **kwargs)


def _adapter(name: str, agent: type[Agent] = Agent, store: type[Store] = Store) -> ReferenceAdapter:
    driver = type(f"{name}Driver", (ReferenceDriver,), {"agent_class": agent, "store_class": store})
    adapter = type(f"{name}Adapter", (ReferenceAdapter,), {"name": name, "driver_class": driver})
    return adapter()


def early_checkpoint() -> ReferenceAdapter:
    return _adapter("early-checkpoint", agent=EarlyCheckpointAgent)


def no_truncate() -> ReferenceAdapter:
    return _adapter("no-truncate", agent=EagerMessagesAgent, store=EagerNoTruncateStore)


def split_checkpoint() -> ReferenceAdapter:
    return _adapter("split-checkpoint", store=SplitCheckpointStore)


def rerun_finished() -> ReferenceAdapter:
    return _adapter("rerun-finished", store=RestartingStore)


def running_as_completed() -> ReferenceAdapter:
    return _adapter("running-as-completed", store=CompletedEarlyStore)


def silent_final_write() -> ReferenceAdapter:
    return _adapter("silent-final-write", agent=SilentFinalWriteAgent)


VARIANTS = (
    "early_checkpoint",
    "no_truncate",
    "split_checkpoint",
    "rerun_finished",
    "running_as_completed",
    "silent_final_write",
)
