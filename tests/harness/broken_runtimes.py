"""Deliberately broken variants of the reference runtime: the engine must catch each one.

Each variant is a runtime adapter (`tests.harness.broken_runtimes:NAME`), built from
the reference adapter with one defect swapped in.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

from sqlalchemy import delete, insert, select, update
from sqlalchemy.exc import SQLAlchemyError

from killpoint.adapters.reference import ReferenceAdapter, ReferenceDriver
from killpoint.runtime import Agent, OpenAIResponses, RunStatus, Store, cancellation
from killpoint.runtime.messages import RunOutput, ToolCall, Usage
from killpoint.runtime.model import ModelError, ModelReply, chain_point, parse_response
from killpoint.runtime.store import schema, sql
from killpoint.runtime.store.store import Checkpoint, StoredRun


class EarlyCheckpointAgent(Agent):
    """A checkpoint taken before its batch finished: the calls are durable, the results not."""

    async def _run_batch(self, st: Any, batch: Any) -> None:
        if self.checkpoint != "runs":
            self._write(st, RunStatus.RUNNING)
        await super()._run_batch(st, batch)


class ResultsLeftOutAgent(Agent):
    """After each batch, a checkpoint written before the batch's results are recorded: they
    land only with the next checkpoint, though every call had returned."""

    async def _run_batch(self, st: Any, batch: Any) -> None:
        messages, executions = len(st.messages), set(st.executions)
        await super()._run_batch(st, batch)
        if self.checkpoint != "tool-batch":
            return
        results = st.messages[messages:]
        new = {c: e for c, e in st.executions.items() if c not in executions}
        del st.messages[messages:]
        for call_id in new:
            del st.executions[call_id]
        self._write(st, RunStatus.RUNNING)
        st.messages.extend(results)
        st.executions.update(new)


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


# -- one per contract check: each breaks the contract in the baseline too, so that only the
# contract (not a comparison with the baseline) can see it.


class ReopeningStore(Store):
    """Resuming a run reopens its session: the other COMPLETED runs are set back to
    RUNNING (ownerless) while the resumed run goes on, and closed again when it completes.
    (Left RUNNING at the end, the status would also break what the baseline acknowledged.)"""

    def claim(self, run_id: str, session_id: str, owner: Any, *, lease_seconds: float) -> StoredRun:
        run = super().claim(run_id, session_id, owner, lease_seconds=lease_seconds)
        self._others(session_id, run_id, RunStatus.COMPLETED, RunStatus.RUNNING)
        return run

    def write_checkpoint(self, cp: Checkpoint) -> int:
        version = super().write_checkpoint(cp)
        if cp.status is RunStatus.COMPLETED:
            self._others(cp.session_id, cp.run_id, RunStatus.RUNNING, RunStatus.COMPLETED)
        return version

    def _others(self, session_id: str, run_id: str, old: RunStatus, new: RunStatus) -> None:
        runs = schema.runs.c
        with self.writing() as conn:
            conn.execute(
                update(schema.runs)
                .where(
                    runs.session_id == session_id,
                    runs.run_id != run_id,
                    runs.status == old.value,
                    runs.owner.is_(None),
                )
                .values(status=new.value)
            )


class LateCancelAgent(Agent):
    """A cancel is noted in memory and honoured only when the model has nothing left to
    call: every remaining batch runs first (agno 3.1's non-streaming run does this)."""

    cancelled: set[str]

    def cancel_run(self, run_id: str) -> None:
        self.__dict__.setdefault("cancelled", set()).add(run_id)

    def _finish(self, st: Any, status: RunStatus, **kwargs: Any) -> RunOutput:
        if status is RunStatus.COMPLETED and st.run_id in self.__dict__.get("cancelled", ()):
            status = RunStatus.CANCELLED
        return super()._finish(st, status, **kwargs)


class DroppingConfirmationsAgent(Agent):
    """The answers given to continue a PAUSED run are dropped: every waiting call is
    rejected as if the user had said no."""

    async def acontinue_run(
        self, run_id: str, session_id: str, *, confirmations: Mapping[str, bool] | None = None
    ) -> RunOutput:
        dropped = dict.fromkeys(confirmations or {}, False)
        return await super().acontinue_run(run_id, session_id, confirmations=dropped)


def _merge(stored: Any, new: Any) -> Any:
    if isinstance(stored, dict) and isinstance(new, dict):
        return {k: _merge(stored.get(k), new.get(k)) for k in {*stored, *new}}
    if isinstance(stored, list) and isinstance(new, list):
        return stored + new
    if isinstance(stored, int) and isinstance(new, int):
        return stored + new
    return new if new is not None else stored


class AddingStateStore(Store):
    """A run's terminal write adds the run's session state to the stored one (numbers
    summed, lists joined) instead of replacing it: every update of the run applied twice."""

    def write_checkpoint(self, cp: Checkpoint) -> int:
        if cp.status.terminal:
            with self.reading() as conn:
                raw = conn.execute(
                    select(schema.sessions.c.state).where(
                        schema.sessions.c.session_id == cp.session_id
                    )
                ).scalar_one_or_none()
            stored = json.loads(raw) if raw else {}
            cp = replace(cp, session_state=_merge(stored, cp.session_state))
        return super().write_checkpoint(cp)


class PerWorkerKeyAgent(Agent):
    """Idempotency keys that name the worker process: a call repeated by the worker that
    resumes the run carries a new key, so the tool's effect happens again."""

    async def _execute(self, st: Any, call: ToolCall, key: str) -> tuple[str, str]:
        return await super()._execute(st, call, f"{key}:{os.getpid()}")


class CallIdKeyAgent(Agent):
    """Asks the model again for a turn whose reply was not durable (no reply journal, as
    most frameworks do) and keys idempotency on the model's call id: a model that re-issues
    the call under a new id gets it run again. Blind to every kind whose model repeats
    itself; `regenerate-ids` catches it."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, journal_replies=False, **kwargs)

    async def _execute(self, st: Any, call: ToolCall, key: str) -> tuple[str, str]:
        return await super()._execute(st, call, f"{st.run_id}:{call.call_id}")


class _CasIgnored:
    """A write transaction's connection whose run-row compare-and-swap always lands: when
    the guarded UPDATE matches no row (another worker owns the run now), the same fields
    are written without the guard, keeping the row's owner, lease and version."""

    _FIELDS = (
        "status",
        "content",
        "error",
        "usage",
        "pending_confirmations",
        "last_checkpoint_at_message_index",
        "checkpoints",
        "updated_at",
    )

    def __init__(self, conn: Any) -> None:
        self._conn = conn

    def exec_driver_sql(self, statement: str, params: Any = None) -> Any:
        # The store runs its statements as the driver's text (runtime.store.sql.Statement).
        result = self._conn.exec_driver_sql(statement, params)
        dialect = self._conn.dialect.name
        guarded = statement in (
            sql.UPDATE_RUN.text_for(dialect),
            sql.UPDATE_RUN_CANCEL.text_for(dialect),
        )
        if guarded and result.rowcount == 0:
            result = self._conn.execute(
                update(schema.runs)
                .where(schema.runs.c.run_id == params["run_id"])
                .values({k: params[k] for k in self._FIELDS})
            )
        return result

    def __getattr__(self, name: str) -> Any:
        return getattr(self._conn, name)


class BlindWriteStore(Store):
    """Checkpoints without compare-and-swap: the agent still fences before each batch, but
    a checkpoint lands whoever owns the run now (rows last-writer-wins, so the owner's own
    next write lands too)."""

    @contextmanager
    def writing(self) -> Iterator[Any]:
        with super().writing() as conn:
            yield _CasIgnored(conn)

    @staticmethod
    def append_rows(conn: Any, cp: Checkpoint) -> None:
        if cp.new_messages:
            conn.execute(
                delete(schema.run_messages).where(
                    schema.run_messages.c.run_id == cp.run_id,
                    schema.run_messages.c.idx >= cp.first_new_index,
                )
            )
        if cp.new_tool_executions:
            conn.execute(
                delete(schema.tool_executions).where(
                    schema.tool_executions.c.run_id == cp.run_id,
                    schema.tool_executions.c.call_id.in_(
                        [e.call_id for e in cp.new_tool_executions]
                    ),
                )
            )
        Store.append_rows(conn, cp)


# -- one per class the matrix was blind to: each is caught by one kind of point or one
# contract check, in every campaign that runs it (BLIND_VARIANTS).


class UnrenewedLeaseAgent(Agent):
    """A heartbeat that renews the lease of the version the run had when this worker took
    it up (none, for a run it began): the next checkpoint moves the version on, every
    renewal after it matches no row, and nothing reads renew_lease's answer, so a tool
    that runs longer than the lease loses the run while its worker is alive and busy."""

    async def _heartbeat(self, st: Any) -> None:
        version = st.version
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            if version is not None:
                with contextlib.suppress(SQLAlchemyError):
                    self.db.renew_lease(st.run_id, st.owner, version, self.lease_seconds)


class LeaseIgnoringStore(Store):
    """A claim that takes the run whenever its compare-and-swap on the version succeeds:
    it never looks at the lease, as if every lease had lapsed."""

    def claim(self, run_id: str, session_id: str, owner: Any, *, lease_seconds: float) -> StoredRun:
        with self.writing() as conn:
            conn.execute(
                update(schema.runs)
                .where(schema.runs.c.run_id == run_id, schema.runs.c.owner.is_not(None))
                .values(lease_expires_at=0.0)
            )
        return super().claim(run_id, session_id, owner, lease_seconds=lease_seconds)


class ContinuingCompletedStore(Store):
    """A claim whose status check lists only CANCELLED as final: a COMPLETED run is
    continued like a RUNNING one (the model is asked again, the run written again)."""

    def claim(self, run_id: str, session_id: str, owner: Any, *, lease_seconds: float) -> StoredRun:
        with self.writing() as conn:
            conn.execute(
                update(schema.runs)
                .where(
                    schema.runs.c.run_id == run_id,
                    schema.runs.c.status == RunStatus.COMPLETED.value,
                )
                .values(status=RunStatus.RUNNING.value)
            )
        return super().claim(run_id, session_id, owner, lease_seconds=lease_seconds)


class DoubleCountingModel(OpenAIResponses):
    """Counts a model call when the request goes out and again with the reply's usage:
    every run, the uninterrupted one too, says it made twice the calls it made."""

    async def respond(self, messages: Any, **kwargs: Any) -> ModelReply:
        reply = await super().respond(messages, **kwargs)
        reply.usage.model_calls += 1
        return reply


class ChainOnlyModel(OpenAIResponses):
    """Chains every turn by `previous_response_id` and trusts the provider to hold the
    chain: after a crash it sends only what follows the last checkpointed response, and
    a provider that no longer has it fails the run."""

    async def respond(self, messages: Any, *, instructions: str | None, tools: Any) -> ModelReply:
        import openai

        kwargs: dict[str, Any] = {"model": self.id}
        if instructions:
            kwargs["instructions"] = instructions
        if tools:
            kwargs["tools"] = list(tools)
        previous, new = chain_point(messages)
        try:
            response = await self._create(kwargs, previous, new)
        except openai.OpenAIError as exc:
            raise ModelError(f"{type(exc).__name__}: {exc}") from exc
        return parse_response(response)


def _adapter(
    name: str,
    agent: type[Agent] = Agent,
    store: type[Store] = Store,
    model: type[OpenAIResponses] | None = None,
) -> ReferenceAdapter:
    attrs: dict[str, Any] = {"agent_class": agent, "store_class": store}
    if model is not None:
        attrs["__init__"] = _with_model(model)
    driver = type(f"{name}Driver", (ReferenceDriver,), attrs)
    adapter = type(f"{name}Adapter", (ReferenceAdapter,), {"name": name, "driver_class": driver})
    return adapter()


def _with_model(model: type[OpenAIResponses]) -> Any:
    def __init__(self: ReferenceDriver, *args: Any, **kwargs: Any) -> None:
        ReferenceDriver.__init__(self, *args, **kwargs)
        old = self.agent.model
        self.agent.model = model(
            old.id, api_key=old._api_key, max_retries=old.max_retries, chain=old.chain
        )

    return __init__


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


def results_left_out() -> ReferenceAdapter:
    """With the reference adapter's invariants off (a batch without results is one): what
    a user's adapter that checks nothing shows."""
    adapter = _adapter("results-left-out", agent=ResultsLeftOutAgent)
    adapter.inspect = lambda *_: []  # type: ignore[method-assign]
    return adapter


VARIANTS = (
    "early_checkpoint",
    "no_truncate",
    "split_checkpoint",
    "rerun_finished",
    "running_as_completed",
    "silent_final_write",
)


def reopening() -> ReferenceAdapter:
    return _adapter("reopening", store=ReopeningStore)


def late_cancel() -> ReferenceAdapter:
    return _adapter("late-cancel", agent=LateCancelAgent)


def dropping_confirmations() -> ReferenceAdapter:
    return _adapter("dropping-confirmations", agent=DroppingConfirmationsAgent)


def adding_state() -> ReferenceAdapter:
    return _adapter("adding-state", store=AddingStateStore)


def per_worker_key() -> ReferenceAdapter:
    return _adapter("per-worker-key", agent=PerWorkerKeyAgent)


def call_id_key() -> ReferenceAdapter:
    return _adapter("call-id-key", agent=CallIdKeyAgent)


def blind_write() -> ReferenceAdapter:
    return _adapter("blind-write", store=BlindWriteStore)


def unrenewed_lease() -> ReferenceAdapter:
    return _adapter("unrenewed-lease", agent=UnrenewedLeaseAgent)


def lease_ignored() -> ReferenceAdapter:
    return _adapter("lease-ignored", store=LeaseIgnoringStore)


def continuing_completed() -> ReferenceAdapter:
    return _adapter("continuing-completed", store=ContinuingCompletedStore)


def double_counted() -> ReferenceAdapter:
    return _adapter("double-counted", model=DoubleCountingModel)


def chain_only() -> ReferenceAdapter:
    return _adapter("chain-only", model=ChainOnlyModel)


# Each was invisible to the matrix, or seen by chance: (variant, the finding kind that
# names it, the point that catches it every time in research/tool-batch).
BLIND_VARIANTS = (
    ("unrenewed_lease", "two-drivers", "lease-outlived:2"),
    ("lease_ignored", "two-drivers", "second-resumer:1"),
    ("continuing_completed", "ended-run-continued", "continue-ended:1"),
    ("chain_only", "status-differs", "provider-forgot:1"),
)


# Each breaks one promise in the baseline too: (variant, the finding kind that alone
# names it, the cell that shows it).
CONTRACT_VARIANTS = (
    ("reopening", "status-regressed", "multi-run/tool-batch/after-checkpoint:3+mid-model:4"),
    ("late_cancel", "cancel-late", "cancel/tool-batch/after-checkpoint:1"),
    ("dropping_confirmations", "confirmation-dropped", "confirm/tool-batch/after-checkpoint:1"),
    ("adding_state", "state-not-once", "session-state/tool-batch/after-checkpoint:2"),
    (
        "per_worker_key",
        "idempotency-key-changed",
        "side-effects-idempotent/tool-batch/mid-batch:2:0",
    ),
    ("silent_final_write", "acknowledged-lost", "multi-run/tool-batch/after-checkpoint:2"),
    # Its uninterrupted run counts twice the calls the model served: the row's finding.
    ("double_counted", "usage-overcounted", "research/tool-batch/after-checkpoint:2"),
    ("blind_write", "stale-write", "research/tool-batch/sigstop-writing:2"),
)

# The same three promises, each seen by one scenario of its own until `reserve` (parallel
# idempotent reservations that update the session state, cancelled mid-run): the
# variant, its finding kind, and a reserve cell that shows it.
RESERVE_VARIANTS = (
    ("late_cancel", "cancel-late", "reserve/tool-batch/after-checkpoint:1"),
    ("adding_state", "state-not-once", "reserve/tool-batch/after-checkpoint:1"),
    ("per_worker_key", "idempotency-key-changed", "reserve/tool-batch/mid-batch:2:0"),
)


class _CancelNow(Exception):
    pass


class EarlyCancelAgent(Agent):
    """A cancel honoured one step early: before the batch of the turn it was asked during,
    so the run ends CANCELLED one batch short, in every run, crashed or not (only the
    scenario's expected calls can tell)."""

    def _fence(self, st: Any) -> None:
        super()._fence(st)
        after = cancellation.cancel_after(st.run_id)
        if after is not None and len(st.messages) > after:
            raise _CancelNow

    async def _loop(self, st: Any) -> RunOutput:
        try:
            return await super()._loop(st)
        except _CancelNow:
            return self._finish(st, RunStatus.CANCELLED)


def early_cancel() -> ReferenceAdapter:
    return _adapter("early-cancel", agent=EarlyCancelAgent)


# -- one per rule of the run's history (killpoint.judge.history) and the store's settings read
# back (killpoint.judge.durability): each breaks the rule in every run, the uninterrupted one
# too, and no kill of the default plan lands where the break shows (HISTORY_VARIANTS).


class _JournalLater:
    """A reply journal whose saves wait until `flush()`."""

    def __init__(self, journal: Any) -> None:
        self.journal = journal
        self.pending: list[tuple[Any, ...]] = []

    def save(self, *args: Any) -> bool:
        self.pending.append(args)
        return True

    def read(self, *args: Any) -> Any:
        return self.journal.read(*args)

    def flush(self) -> None:
        for args in self.pending:
            self.journal.save(*args)
        self.pending.clear()


class WriteBehindJournalAgent(Agent):
    """Journals a reply once its batch has run, on the way to the batch's checkpoint (a
    write taken off the path to the first tool): each effect begins before the reply that
    asked for it is durable, and a kill between the two re-asks a model whose second answer
    may differ. The effect and the journal's write are microseconds apart: no kill lands
    there."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.journal is not None:
            self.journal = _JournalLater(self.journal)  # type: ignore[assignment]

    async def _run_batch(self, st: Any, batch: Any) -> None:
        await super()._run_batch(st, batch)
        if isinstance(self.journal, _JournalLater):
            self.journal.flush()


class MonotonicLeaseStore(Store):
    """Checkpoints stamp the run's lease on the monotonic clock (seconds since boot) while
    claims read it against the wall clock: every lease a checkpoint stamps has long run out
    when it is written, and only the owner's being alive on this host keeps a second
    resumer off (a claim after the owner died takes the run at once, as it should anyway)."""

    def write_checkpoint(self, cp: Checkpoint) -> int:
        if cp.lease_expires_at is not None:
            import time

            cp = replace(cp, lease_expires_at=cp.lease_expires_at - time.time() + time.monotonic())
        return super().write_checkpoint(cp)


class FreshUsageStore(Store):
    """A claim hands the continued run a fresh usage record: each continue counts its
    model calls anew, so a run continued after a pause or an error (the uninterrupted one
    too) counts only those of its last stretch."""

    def claim(self, run_id: str, session_id: str, owner: Any, *, lease_seconds: float) -> StoredRun:
        run = super().claim(run_id, session_id, owner, lease_seconds=lease_seconds)
        run.usage = Usage()
        return run


class UnsyncedHookStore(Store):
    """A connection hook added after the runtime's own (a shared 'speed-up') turns SQLite's
    synchronous OFF on every connection: the runtime passes FULL and a reader of what it
    passed sees FULL; the store never syncs a commit."""

    @property
    def engine(self) -> Any:
        engine = super().engine
        if not engine.__dict__.get("killpoint_unsynced"):
            from sqlalchemy import event

            def off(dbapi_conn: Any, _record: Any) -> None:
                dbapi_conn.execute("PRAGMA synchronous=OFF")

            event.listen(engine, "connect", off)
            engine.__dict__["killpoint_unsynced"] = True
        return engine


class FastFinishStore(Store):
    """A run's terminal write commits with SQLite's synchronous OFF on its connection (the
    status back to the caller sooner), then turns it back to FULL: every other commit is
    synced, the settings read back say FULL, and the status returned is not durable until
    a later commit syncs the WAL. Only the store-file trace sees it (FUSE)."""

    _fast = False

    def write_checkpoint(self, cp: Checkpoint) -> int:
        self._fast = cp.status.terminal
        try:
            return super().write_checkpoint(cp)
        finally:
            self._fast = False

    @contextmanager
    def writing(self) -> Iterator[Any]:
        if not self._fast or self.dialect != "sqlite":
            with super().writing() as conn:
                yield conn
            return
        from killpoint.runtime.store.engine import WRITER

        with self.engine.connect().execution_options(**{WRITER: True}) as conn:
            raw = conn.connection.driver_connection
            raw.execute("PRAGMA synchronous=OFF")
            try:
                with conn.begin():
                    yield conn
            finally:
                raw.execute("PRAGMA synchronous=FULL")


def write_behind_journal() -> ReferenceAdapter:
    return _adapter("write-behind-journal", agent=WriteBehindJournalAgent)


def monotonic_lease() -> ReferenceAdapter:
    return _adapter("monotonic-lease", store=MonotonicLeaseStore)


def fresh_usage() -> ReferenceAdapter:
    return _adapter("fresh-usage", store=FreshUsageStore)


def unsynced_hook() -> ReferenceAdapter:
    return _adapter("unsynced-hook", store=UnsyncedHookStore)


def fast_finish() -> ReferenceAdapter:
    return _adapter("fast-finish", store=FastFinishStore)


# (variant, the finding kind that alone names it, the cell that shows it: in the row, since
# the uninterrupted run breaks the rule, and in no crash cell beyond the row's finding).
HISTORY_VARIANTS = (
    ("write_behind_journal", "effect-before-record", "research/tool-batch/after-checkpoint:2"),
    ("monotonic_lease", "lease-stamped-expired", "research/tool-batch/after-checkpoint:2"),
    ("fresh_usage", "usage-undercounted", "flaky-model/tool-batch/continue-ended:1"),
    ("unsynced_hook", "durability-weaker", "research/tool-batch/after-checkpoint:2"),
)
# Needs the store-file trace (FUSE): its break shows in no other event.
SYNC_VARIANTS = (
    ("fast_finish", "acknowledged-unsynced", "research/tool-batch/after-checkpoint:2"),
)


# -- one per plan that reaches a narrow window (NARROW_VARIANTS): each passes every point
# the plan offered before, and the new points catch it every time.


class CompletionOrderAgent(Agent):
    """Keeps a batch's results in the order its calls finished, not the order they were
    asked in (as a runtime that appends each result as it comes back does): a run whose
    calls happen to finish in call order ends as the baseline's, one whose calls finish in
    another order holds its results out of order."""

    async def _run_batch(self, st: Any, batch: Any) -> None:
        before = len(st.messages)
        finished: list[str] = []
        record = self._record

        def recording(state: Any, execution: Any) -> None:
            finished.append(execution.call_id)
            record(state, execution)

        self._record = recording  # type: ignore[method-assign]
        try:
            await super()._run_batch(st, batch)
        finally:
            del self._record
        results = st.messages[before:]
        by_id = {m.call_id: m for m in results}
        st.messages[before:] = [by_id[c] for c in finished if c in by_id] + [
            m for m in results if m.call_id not in finished
        ]


class StaleRenewalAgent(Agent):
    """A heartbeat that renews the lease of the version the run had at its first renewal:
    renewals work until the run's next checkpoint moves the version on, then match no row,
    and nothing reads renew_lease's answer. Held before its first renewal (lease-outlived),
    the owner keeps the run; held once it has renewed and checkpointed since, it loses it."""

    async def _heartbeat(self, st: Any) -> None:
        version = None
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            if st.version is None:
                continue
            if version is None:
                version = st.version
            with contextlib.suppress(SQLAlchemyError):
                self.db.renew_lease(st.run_id, st.owner, version, self.lease_seconds)


class PreClaimVersionAgent(Agent):
    """A continued run's heartbeat renews the lease of the version the run had before this
    worker claimed it (read before the claim, kept by mistake): a run this worker began
    renews as it should, a run it resumed renews nothing, and loses its lease while alive."""

    stale: dict[str, int]

    async def acontinue_run(self, run_id: str, session_id: str, **kwargs: Any) -> RunOutput:
        before = self.db.read_run(run_id, whole=False)
        if before is not None:
            self.__dict__.setdefault("stale", {})[run_id] = before.version
        return await super().acontinue_run(run_id, session_id, **kwargs)

    async def _heartbeat(self, st: Any) -> None:
        stale = self.__dict__.get("stale", {}).get(st.run_id)
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            version = stale if stale is not None else st.version
            if version is not None:
                with contextlib.suppress(SQLAlchemyError):
                    self.db.renew_lease(st.run_id, st.owner, version, self.lease_seconds)


class EagerStealStore(Store):
    """A claim takes over a run whose lease has less than half its length left ("faster
    failover"), trusting the owner's heartbeat to keep a live lease above that: true while
    every worker's clock agrees, false once the owner's runs behind."""

    def claim(self, run_id: str, session_id: str, owner: Any, *, lease_seconds: float) -> StoredRun:
        import time

        with self.writing() as conn:
            conn.execute(
                update(schema.runs)
                .where(
                    schema.runs.c.run_id == run_id,
                    schema.runs.c.owner.is_not(None),
                    schema.runs.c.lease_expires_at < time.time() + lease_seconds / 2,
                )
                .values(lease_expires_at=0.0)
            )
        return super().claim(run_id, session_id, owner, lease_seconds=lease_seconds)


def completion_order() -> ReferenceAdapter:
    return _adapter("completion-order", agent=CompletionOrderAgent)


def stale_renewal() -> ReferenceAdapter:
    return _adapter("stale-renewal", agent=StaleRenewalAgent)


def pre_claim_version() -> ReferenceAdapter:
    return _adapter("pre-claim-version", agent=PreClaimVersionAgent)


def eager_steal() -> ReferenceAdapter:
    return _adapter("eager-steal", store=EagerStealStore)


# (variant, the finding kind that names it, the kind whose point catches it, the row, the
# kinds that were there before and pass it in that row).
NARROW_VARIANTS = (
    ("stale_renewal", "two-drivers", "lease-renewed", "research/tool-batch", ("lease-outlived",)),
    ("pre_claim_version", "two-drivers", "lease-resumed", "research/tool-batch", ("lease-outlived", "lease-renewed")),
    ("eager_steal", "two-drivers", "clock-behind", "research/tool-batch", ("second-resumer",)),
    ("completion_order", "messages-differ", "finish-order", "parallel-fetch/tool-batch", ("after-checkpoint", "mid-batch")),
)  # fmt: skip
