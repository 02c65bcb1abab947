"""The agent loop: model turn, tool batch, checkpoint; continue in place after a crash."""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from . import cancellation
from .errors import CheckpointFailed, ConfigurationError, RunNotContinuable, RunOwnedElsewhere
from .messages import Message, RunOutput, ToolCall, ToolExecution, Usage
from .model import ModelError, ModelReply, OpenAIResponses
from .status import CHECKPOINT_MODES, RunStatus
from .store import Checkpoint, Owner, Store
from .store.replies import ReplyJournal
from .tools import SESSION_STATE, Tool, as_tool


def idempotency_key(run_id: str, turn: int, call_index: int) -> str:
    """Stable across crashes and resumes: the same call of the same run has the same key."""
    return f"{run_id}:{turn}:{call_index}"


@dataclass
class _RunState:
    run_id: str
    session_id: str
    input: str
    created_at: float
    owner: Owner
    history: list[Message]
    session_state: dict[str, Any]
    messages: list[Message] = field(default_factory=list)
    persisted: int = 0  # messages already in the store
    executions: dict[str, ToolExecution] = field(default_factory=dict)
    persisted_calls: set[str] = field(default_factory=set)
    usage: Usage = field(default_factory=Usage)
    checkpoints: int = 0
    version: int | None = None  # None until the run has a row
    confirmations: dict[str, bool] = field(default_factory=dict)
    # Replies journaled before the crash, by the message index they take (store/replies.py).
    journaled: dict[int, tuple[Message, Usage]] = field(default_factory=dict)


class Agent:
    """An agent whose runs are checkpointed to a SQL store.

    checkpoint="runs" persists at terminal states only; "tool-batch" also after every
    tool batch (status RUNNING); "tool" also after every tool result.

    Each reply that asks for tools is journaled before its batch runs (in "runs", once the
    run has a row) (`journal_replies`, store/replies.py): a resumed turn the journal holds
    takes that reply instead of asking the model again, whose second answer may differ.
    """

    def __init__(
        self,
        name: str,
        model: OpenAIResponses,
        db: Store | str,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        instructions: str | None = None,
        *,
        checkpoint: str = "runs",
        lease_seconds: float = 30.0,
        add_history: bool = True,
        journal_replies: bool = True,
    ) -> None:
        if checkpoint not in CHECKPOINT_MODES:
            raise ConfigurationError(
                f"runtime: checkpoint={checkpoint!r} is not a mode; choose one of "
                f"{', '.join(repr(m) for m in CHECKPOINT_MODES)}"
            )
        if lease_seconds <= 0:
            raise ConfigurationError(
                f"runtime: lease_seconds={lease_seconds!r} must be positive (default 30)"
            )
        self.name = name
        self.model = model
        self.db = db if isinstance(db, Store) else Store(db)
        self.tools = [as_tool(t) for t in tools]
        self._tools = {t.name: t for t in self.tools}
        if len(self._tools) != len(self.tools):
            raise ConfigurationError(
                f"runtime: two tools share a name in {[t.name for t in self.tools]!r}; "
                "pass name= to Tool.from_function to tell them apart"
            )
        self.instructions = instructions
        self.checkpoint = checkpoint
        self.lease_seconds = lease_seconds
        self.add_history = add_history
        self.journal = ReplyJournal(self.db) if journal_replies else None
        self._active: dict[str, _RunState] = {}  # runs this agent is driving now

    def __repr__(self) -> str:
        return f"Agent(name={self.name!r}, model={self.model!r}, checkpoint={self.checkpoint!r})"

    # -- public API ---------------------------------------------------------------------

    async def arun(
        self, input: str, session_id: str | None = None, run_id: str | None = None
    ) -> RunOutput:
        session_id = session_id or uuid.uuid4().hex
        run_id = run_id or uuid.uuid4().hex
        if self.db.read_run(run_id, whole=False) is not None:
            raise ConfigurationError(
                f"runtime: run {run_id!r} already exists; use acontinue_run() to resume it"
            )
        state = self.db.ensure_session(session_id, self.name)
        # After every run the session holds, whatever this process's clock says: a session's
        # runs are ordered by when they started, and the history a run sees is the runs
        # before it, so a clock behind another worker's must not put a new run first.
        created_at = max(time.time(), self.db.latest_run_start(session_id) + 1e-6)
        st = _RunState(
            run_id=run_id,
            session_id=session_id,
            input=input,
            created_at=created_at,
            owner=Owner.current(),
            history=self._history(session_id, created_at),
            session_state=state,
            messages=[Message(role="user", content=input)],
            # A run started again under its id after a crash lost it whole: its effects
            # came from the replies its first attempt journaled.
            journaled=self.journal.read(run_id, 1) if self.journal and self._journals(None) else {},
        )
        return await self._drive(st)

    async def acontinue_run(
        self,
        run_id: str,
        session_id: str,
        *,
        confirmations: Mapping[str, bool] | None = None,
    ) -> RunOutput:
        """Resume a RUNNING, ERROR or PAUSED run in place, from its last checkpoint.

        A PAUSED run needs `confirmations`: call id -> True (run it) / False (reject it).
        """
        confirmations = dict(confirmations or {})
        before = self.db.read_run(run_id, whole=False)
        if before is not None and before.status is RunStatus.PAUSED:
            missing = [c for c in before.pending_confirmations if c not in confirmations]
            if missing:
                raise RunNotContinuable(
                    f"runtime: run {run_id!r} is PAUSED waiting for confirmation of calls "
                    f"{missing!r}; pass confirmations={{call_id: True or False}}"
                )
        owner = Owner.current()
        stored = self.db.claim(run_id, session_id, owner, lease_seconds=self.lease_seconds)
        if stored.cancel_after is not None:
            cancellation.request_cancel(run_id, stored.cancel_after)
        session = self.db.read_session(session_id) or {"state": {}}
        st = _RunState(
            run_id=run_id,
            session_id=session_id,
            input=stored.input,
            created_at=stored.created_at,
            owner=owner,
            history=self._history(session_id, stored.created_at),
            session_state=session["state"],
            messages=list(stored.messages),
            persisted=len(stored.messages),
            executions={e.call_id: e for e in stored.tool_executions},
            persisted_calls={e.call_id for e in stored.tool_executions},
            usage=stored.usage,
            checkpoints=stored.checkpoints,
            version=stored.version,
            confirmations=confirmations,
            journaled=self.journal.read(run_id, len(stored.messages)) if self.journal else {},
        )
        return await self._drive(st)

    def cancel_run(self, run_id: str) -> None:
        """Ask the run to stop at its next step boundary; it ends CANCELLED, persisted.

        A step in flight completes first. The request is also written to the run's row
        (when it has one), so a worker that resumes the run after a crash honours it at
        the same boundary (see runtime.cancellation).
        """
        st = self._active.get(run_id)
        after = len(st.messages) if st is not None else -1
        cancellation.request_cancel(run_id, after)
        self.db.request_cancel(run_id, after)

    def get_run(self, run_id: str) -> RunOutput | None:
        """The run as the store holds it."""
        stored = self.db.read_run(run_id)
        if stored is None:
            return None
        return RunOutput(
            run_id=stored.run_id,
            session_id=stored.session_id,
            status=stored.status,
            messages=stored.messages,
            tool_executions=stored.tool_executions,
            content=stored.content,
            error=stored.error,
            usage=stored.usage,
            last_checkpoint_at_message_index=stored.last_checkpoint_at_message_index,
            checkpoints=stored.checkpoints,
            pending_confirmations=stored.pending_confirmations,
        )

    def run(
        self, input: str, session_id: str | None = None, run_id: str | None = None
    ) -> RunOutput:
        return asyncio.run(self.arun(input, session_id=session_id, run_id=run_id))

    def continue_run(
        self, run_id: str, session_id: str, *, confirmations: Mapping[str, bool] | None = None
    ) -> RunOutput:
        return asyncio.run(self.acontinue_run(run_id, session_id, confirmations=confirmations))

    # -- the loop -----------------------------------------------------------------------

    def _history(self, session_id: str, before: float) -> list[Message]:
        return self.db.session_history(session_id, before=before) if self.add_history else []

    async def _drive(self, st: _RunState) -> RunOutput:
        heartbeat = asyncio.create_task(self._heartbeat(st))
        self._active[st.run_id] = st
        try:
            return await self._loop(st)
        finally:
            self._active.pop(st.run_id, None)
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat
            cancellation.clear(st.run_id)

    async def _loop(self, st: _RunState) -> RunOutput:
        schemas = [t.schema() for t in self.tools]
        fresh: ModelReply | None = None  # a reply just asked for, not yet journaled
        while True:
            last = st.messages[-1]
            in_batch = last.role == "assistant" and bool(last.tool_calls)
            after = cancellation.cancel_after(st.run_id)
            if after is not None and len(st.messages) > after and not in_batch:
                return self._finish(st, RunStatus.CANCELLED)
            if in_batch:
                # A batch without results: resumed mid-batch ("tool" mode) or just confirmed.
                batch = last
            elif (journaled := st.journaled.pop(len(st.messages), None)) is not None:
                # Asked before the crash, its batch begun: the reply its effects came from.
                message, usage = journaled
                st.usage.add(usage)
                st.messages.append(message)
                batch = message
            else:
                try:
                    reply = await self.model.respond(
                        st.history + st.messages, instructions=self.instructions, tools=schemas
                    )
                except ModelError as exc:
                    return self._finish(st, RunStatus.ERROR, error=str(exc))
                st.usage.add(reply.usage)
                st.messages.append(reply.message)
                if not reply.message.tool_calls:
                    return self._finish(st, RunStatus.COMPLETED, content=reply.message.content)
                batch = reply.message
                fresh = reply
            waiting = [
                c.call_id
                for c in batch.tool_calls
                if self._needs_confirmation(c) and c.call_id not in st.confirmations
            ]
            if waiting:
                return self._finish(st, RunStatus.PAUSED, pending=waiting)
            self._fence(st)
            if fresh is not None and self.journal is not None and self._journals(st.version):
                # After the fence: a worker that lost the run journals nothing.
                self.journal.save(st.run_id, len(st.messages) - 1, fresh.message, fresh.usage)
            fresh = None
            await self._run_batch(st, batch)
            if self.checkpoint != "runs":
                self._write(st, RunStatus.RUNNING)

    def _journals(self, version: int | None) -> bool:
        """Whether replies are journaled: in the modes that persist mid-run, and in "runs"
        once the run has a row (an ERROR or PAUSED run continued). "runs" promises nothing
        else mid-run: a run killed before its first write leaves no row, and no reply."""
        return self.journal is not None and (self.checkpoint != "runs" or version is not None)

    def _fence(self, st: _RunState) -> None:
        """Before side effects, prove the run is still ours: a worker that was paused
        while another took over stops here, instead of repeating the batch's effects.

        A read suffices while the lease was renewed within the heartbeat's period (two
        thirds of it left): nobody can claim the run before it lapses, and the heartbeat
        renews it first. Only a lease that has run lower is renewed here, by a write."""
        if st.version is None:
            return  # no row yet: nobody else can have taken the run
        left = self.db.lease_left(st.run_id, st.owner, st.version)
        if left is not None and left >= self.lease_seconds * 2 / 3:
            return
        if left is None or not self.db.renew_lease(
            st.run_id, st.owner, st.version, self.lease_seconds
        ):
            raise RunOwnedElsewhere(
                f"runtime: run {st.run_id!r} was taken over by another worker; this worker "
                "stopped before running its next tool batch"
            )

    def _needs_confirmation(self, call: ToolCall) -> bool:
        tool = self._tools.get(call.name)
        return tool is not None and tool.requires_confirmation

    async def _run_batch(self, st: _RunState, batch: Message) -> None:
        turn = sum(1 for m in st.messages if m.role == "assistant")
        # "tool" mode checkpoints each result with the session state. A call that updates
        # the state holds this lock from its start to its checkpoint, and every other
        # call's checkpoint waits for it: no checkpoint holds an update whose call has no
        # durable result (a resume would run that call again and apply it twice).
        state_turn = asyncio.Lock()

        async def one(index: int, call: ToolCall) -> ToolExecution:
            done = st.executions.get(call.call_id)
            if done is not None:  # its result landed before the crash ("tool" mode)
                return done
            if self.checkpoint == "tool" and self._takes_state(call):
                async with state_turn:
                    # The call before it may have found the run taken over at its checkpoint.
                    self._fence(st)
                    return await run(index, call, holding=True)
            return await run(index, call, holding=False)

        async def run(index: int, call: ToolCall, *, holding: bool) -> ToolExecution:
            key = idempotency_key(st.run_id, turn, index)
            result, status = await self._execute(st, call, key)
            execution = ToolExecution(
                call_id=call.call_id,
                name=call.name,
                arguments=call.arguments,
                result=result,
                status=status,
                turn=turn,
                call_index=index,
                idempotency_key=key,
            )
            if self.checkpoint == "tool" and not holding:
                async with state_turn:
                    self._record(st, execution)
            else:
                self._record(st, execution)
            return execution

        # The post-gather barrier: every call of the batch has a result after this line.
        results = await asyncio.gather(*(one(i, c) for i, c in enumerate(batch.tool_calls)))
        for e in results:
            st.messages.append(
                Message(
                    role="tool", content=e.result, call_id=e.call_id, name=e.name, status=e.status
                )
            )

    def _takes_state(self, call: ToolCall) -> bool:
        tool = self._tools.get(call.name)
        return tool is not None and SESSION_STATE in tool.injected

    def _record(self, st: _RunState, execution: ToolExecution) -> None:
        st.executions[execution.call_id] = execution
        if self.checkpoint == "tool":
            self._write(st, RunStatus.RUNNING)

    async def _execute(self, st: _RunState, call: ToolCall, key: str) -> tuple[str, str]:
        tool = self._tools.get(call.name)
        if tool is None:
            known = ", ".join(sorted(self._tools)) or "none"
            return f"error: unknown tool {call.name!r}; tools: {known}", "error"
        if tool.requires_confirmation and st.confirmations.get(call.call_id) is False:
            return "rejected: the user did not confirm this call", "rejected"
        context = {"idempotency_key": key, "session_state": st.session_state, "run_id": st.run_id}
        try:
            return await tool.invoke(call.arguments, context), "ok"
        except Exception as exc:  # a failing tool is a result for the model, not a crash
            return f"error: {type(exc).__name__}: {exc}", "error"

    def _finish(
        self,
        st: _RunState,
        status: RunStatus,
        *,
        content: str | None = None,
        error: str | None = None,
        pending: list[str] | None = None,
    ) -> RunOutput:
        # The run is acknowledged only once this write lands; if it fails the caller
        # gets CheckpointFailed, never a status the store does not hold.
        self._write(st, status, content=content, error=error, pending=pending or [])
        return RunOutput(
            run_id=st.run_id,
            session_id=st.session_id,
            status=status,
            messages=list(st.messages),
            tool_executions=sorted(st.executions.values(), key=lambda e: (e.turn, e.call_index)),
            content=content,
            error=error,
            usage=st.usage,
            last_checkpoint_at_message_index=st.persisted,
            checkpoints=st.checkpoints,
            pending_confirmations=pending or [],
        )

    def _write(
        self,
        st: _RunState,
        status: RunStatus,
        *,
        content: str | None = None,
        error: str | None = None,
        pending: list[str] | None = None,
    ) -> None:
        new_calls = [e for c, e in st.executions.items() if c not in st.persisted_calls]
        cp = Checkpoint(
            run_id=st.run_id,
            session_id=st.session_id,
            agent_name=self.name,
            mode=self.checkpoint,
            status=status,
            input=st.input,
            content=content,
            error=error,
            usage=Usage(**st.usage.to_dict()),
            last_checkpoint_at_message_index=len(st.messages),
            checkpoints=st.checkpoints + 1,
            first_new_index=st.persisted,
            new_messages=st.messages[st.persisted :],
            new_tool_executions=new_calls,
            pending_confirmations=pending or [],
            session_state=st.session_state,
            owner=st.owner,
            expected_version=st.version,
            cancel_after=cancellation.cancel_after(st.run_id),
            lease_expires_at=None if status.terminal else time.time() + self.lease_seconds,
            created_at=st.created_at,
        )
        try:
            st.version = self.db.write_checkpoint(cp)
        except RunOwnedElsewhere:
            raise
        except SQLAlchemyError as exc:
            raise CheckpointFailed(
                f"runtime: checkpoint {cp.checkpoints} of run {st.run_id!r} ({status.value}) "
                f"did not land: {type(exc).__name__}: {exc.args[0] if exc.args else exc}"
            ) from exc
        st.persisted = len(st.messages)
        st.persisted_calls.update(e.call_id for e in new_calls)
        st.checkpoints += 1

    async def _heartbeat(self, st: _RunState) -> None:
        """Keep the lease alive while the run holds a row; a long tool must not lose it."""
        while True:
            await asyncio.sleep(self.lease_seconds / 3)
            if st.version is not None:
                with contextlib.suppress(SQLAlchemyError):
                    self.db.renew_lease(st.run_id, st.owner, st.version, self.lease_seconds)
