"""The reference runtime under test."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlalchemy import text

from killpoint.adapters import reference_reads as reads
from killpoint.adapters.checkpoint_gates import CheckpointGates
from killpoint.adapters.protocol import RuntimeAdapter
from killpoint.adapters.reference_history import report_history
from killpoint.adapters.reference_reads import SqliteReads
from killpoint.runtime import Agent, OpenAIResponses, RunOutput, RunStatus, Store, Tool
from killpoint.runtime.store.store import StoredRun
from killpoint.scenarios import Ledger, RunResult, Scenario, ToolEnv
from killpoint.stores import kind_of_url
from killpoint.stores.per_url import PerUrl
from killpoint.values.findings import Finding
from killpoint.values.modes import REFERENCE_MODES, Mode

SCRIPTED_API_KEY = "sk-killpoint-scripted-model"

# What the comparison leaves out, and why: ids are fresh per run, times and
# ownership differ by construction, `checkpoints` counts writes (a resumed run
# may write more than an uninterrupted one).
EXCLUDED = (
    "run_id",
    "session_id",
    "call_id",
    "response_id",
    "idempotency_key",
    "created_at",
    "updated_at",
    "version",
    "owner",
    "lease_expires_at",
    "checkpoints",
)


class ReferenceDriver:
    """Builds a reference `Agent` from a scenario and drives it (scenarios.Driver).

    Subclasses may swap `agent_class` or `store_class` (variants of the runtime).
    """

    agent_class: type[Agent] = Agent
    store_class: type[Store] = Store

    def __init__(
        self,
        scenario: Scenario,
        store: Store | str,
        mode: str,
        ledger: Ledger,
        *,
        model_id: str = "gpt-4.1-mini",
        lease_seconds: float = 30.0,
        chain: bool = True,
        synchronous: str = "FULL",
    ) -> None:
        self.scenario = scenario
        tools = [
            Tool.from_function(fn, requires_confirmation=fn.__name__ in scenario.confirm)
            for fn in scenario.build_tools(ToolEnv(ledger))
        ]
        self.agent = self.agent_class(
            name=scenario.name,
            model=OpenAIResponses(
                model_id, api_key=SCRIPTED_API_KEY, max_retries=scenario.max_retries, chain=chain
            ),
            db=store
            if isinstance(store, Store)
            else self.store_class(store, synchronous=synchronous),
            tools=tools,
            instructions=scenario.instructions,
            checkpoint=mode,
            lease_seconds=lease_seconds,
        )

    async def start(self, input: str, *, session_id: str, run_id: str) -> RunResult:
        return _result(await self.agent.arun(input, session_id=session_id, run_id=run_id))

    async def resume(
        self, run_id: str, *, session_id: str, confirmations: Mapping[str, bool]
    ) -> RunResult:
        if not confirmations and self.scenario.confirm:
            # Resumed after a crash while PAUSED: answer as the scenario says.
            stored = self.agent.get_run(run_id)
            if stored is not None and stored.pending_confirmations:
                names = _call_names(stored)
                confirmations = {
                    cid: self.scenario.confirm.get(names.get(cid, ""), True)
                    for cid in stored.pending_confirmations
                }
        out = await self.agent.acontinue_run(run_id, session_id, confirmations=confirmations)
        return _result(out)

    def cancel(self, run_id: str) -> None:
        self.agent.cancel_run(run_id)


def _call_names(out: RunOutput) -> dict[str, str]:
    return {c.call_id: c.name for m in out.messages for c in m.tool_calls}


def _result(out: RunOutput) -> RunResult:
    names = _call_names(out)
    return RunResult(
        run_id=out.run_id,
        status=out.status.value,
        content=out.content,
        pending=[(cid, names.get(cid, "")) for cid in out.pending_confirmations],
    )


# Polled while a worker is parked at its gate; text, like the store's own statements,
# because each cell's store is read through a new engine (see runtime/store/sql.py).
PROGRESS = text(reads.PROGRESS)
LEASE_DEADLINE = text(reads.LEASE_DEADLINE)
READS = ("progress", "lease_deadline", "read_session", "inspect")  # made in the engine


class ReferenceAdapter(RuntimeAdapter):
    """The reference runtime with its model chaining turns by `previous_response_id`
    (the Responses API's own way to continue a conversation); `transcript()` is the
    same runtime resending the whole transcript every turn."""

    name = "reference"
    modes: tuple[Mode, ...] = REFERENCE_MODES
    excluded = EXCLUDED
    preload_modules: tuple[str, ...] = ()  # the forkserver's base set covers it
    driver_class: type[ReferenceDriver] = ReferenceDriver
    chain = True
    synchronous = "FULL"  # SQLite's PRAGMA synchronous for the runtime's own connections

    @property
    def bounded_reads(self) -> bool:
        """Its reads of a SQLite store wait for a lock at most the busy timeout (30 s, the
        store's own), in WAL mode seldom at all: the engine calls them in the cell's
        thread (killpoint.adapters.protocol). A subclass that replaces one of them is not
        taken at this word."""
        return all(getattr(type(self), name) is getattr(ReferenceAdapter, name) for name in READS)

    def instrument(self, checkpoints: CheckpointGates) -> None:
        """Wrap Store.write_checkpoint in this (worker) process, and report to the run's
        history what the runtime makes durable, the leases it stamps, the claims it
        decides and its store's settings; the runtime is unchanged."""
        report_history(checkpoints)
        checkpoints.watch_sqlalchemy()

    def driver(
        self, scenario: Scenario, store_url: str, mode: str, ledger: Ledger, *, lease_seconds: float
    ) -> ReferenceDriver:
        return self.driver_class(
            scenario,
            store_url,
            mode,
            ledger,
            lease_seconds=lease_seconds,
            chain=self.chain,
            synchronous=self.synchronous,
        )

    # -- reading back -------------------------------------------------------------------

    def progress(self, store_url: str, session_id: str) -> int:
        if kind_of_url(store_url) == "sqlite":
            return _reads(store_url).progress(session_id)
        store = _store(store_url)
        if not store.has_schema():  # a store a power cut took back to empty
            return 0
        with store.reading() as conn:
            return int(conn.execute(PROGRESS, {"session_id": session_id}).scalar_one())

    def lease_deadline(self, store_url: str, session_id: str) -> float | None:
        if kind_of_url(store_url) == "sqlite":
            return _reads(store_url).lease_deadline(session_id)
        with _store(store_url).reading() as conn:
            return conn.execute(LEASE_DEADLINE, {"session_id": session_id}).scalar_one()

    def read_session(self, store_url: str, session_id: str) -> dict[str, Any] | None:
        session, runs = _session(store_url, session_id)
        if session is None:
            return None
        return {"state": session["state"], "runs": {r.run_id: normalise_run(r) for r in runs}}

    def inspect(self, store_url: str, session_id: str) -> Sequence[str | Finding]:
        problems: list[str] = []
        if kind_of_url(store_url) == "sqlite":
            verdict = _reads(store_url).integrity()
            if verdict != "ok":
                problems.append(f"SQLite integrity_check: {verdict}")
        _, runs = _session(store_url, session_id)
        for run in runs:
            problems.extend(f"run {run.run_id}: {p}" for p in run_invariants(run))
        return problems


def transcript() -> ReferenceAdapter:
    """The reference runtime resending the whole transcript each turn
    (`--runtime killpoint.adapters.reference:transcript`)."""
    adapter = ReferenceAdapter()
    adapter.name = "killpoint.adapters.reference:transcript"
    adapter.chain = False
    return adapter


def synchronous_normal() -> ReferenceAdapter:
    """The reference runtime with SQLite's `synchronous=NORMAL` (WAL synced only at
    checkpoints, a setting widely recommended for speed): a power cut may lose the last
    commits, COMPLETED ones too (`--runtime killpoint.adapters.reference:synchronous_normal`)."""
    return _with_synchronous("NORMAL")


def synchronous_off() -> ReferenceAdapter:
    """The reference runtime with SQLite's `synchronous=OFF` (never syncs): a power cut may
    lose anything written since the store was created
    (`--runtime killpoint.adapters.reference:synchronous_off`)."""
    return _with_synchronous("OFF")


def _with_synchronous(level: str) -> ReferenceAdapter:
    adapter = ReferenceAdapter()
    adapter.name = f"killpoint.adapters.reference:synchronous_{level.lower()}"
    adapter.synchronous = level
    return adapter


_store: PerUrl[Store] = PerUrl(Store, Store.dispose)
# The engine's reads of a SQLite store: sqlite3 itself, the runtime's statements
# (reference_reads.py).
_reads: PerUrl[SqliteReads] = PerUrl(SqliteReads, SqliteReads.close)


def _session(store_url: str, session_id: str) -> tuple[dict[str, Any] | None, list[StoredRun]]:
    """The session and its runs, whole, as the store holds them now."""
    if kind_of_url(store_url) == "sqlite":
        return _reads(store_url).session(session_id)
    store = _store(store_url)
    session = store.read_session(session_id)
    if session is None:
        return None, []
    runs = []
    for run_id in session["run_ids"]:
        stored = store.read_run(run_id)
        assert stored is not None
        runs.append(stored)
    return session, runs


def normalise_run(run: Any) -> dict[str, Any]:
    names = {c.call_id: c.name for m in run.messages for c in m.tool_calls}
    return {
        "input": run.input,
        "status": run.status.value,
        "content": run.content,
        "error": run.error,
        "usage": run.usage.to_dict(),
        "last_checkpoint_at_message_index": run.last_checkpoint_at_message_index,
        "pending_confirmations": [names.get(c, "?") for c in run.pending_confirmations],
        "messages": [
            {
                "role": m.role,
                "content": m.content,
                "tool_calls": [{"name": c.name, "arguments": c.arguments} for c in m.tool_calls],
                "name": m.name,
                "status": m.status,
            }
            for m in run.messages
        ],
        "tool_executions": [
            {
                "name": e.name,
                "arguments": e.arguments,
                "result": e.result,
                "status": e.status,
                "turn": e.turn,
                "call_index": e.call_index,
            }
            for e in run.tool_executions
        ],
    }


def run_invariants(run: Any) -> list[str]:
    """What must hold of a run in the store at any moment, crash or not."""
    problems: list[str] = []
    if len(run.messages) != run.last_checkpoint_at_message_index:
        problems.append(
            f"{len(run.messages)} messages but last_checkpoint_at_message_index is "
            f"{run.last_checkpoint_at_message_index}"
        )
    executed = {e.call_id for e in run.tool_executions}
    msgs = run.messages
    for n, m in enumerate(msgs):
        if m.role != "assistant" or not m.tool_calls:
            continue
        answers = [x for x in msgs[n + 1 : n + 1 + len(m.tool_calls)] if x.role == "tool"]
        if n + 1 == len(msgs):
            # A trailing batch without results: only PAUSED, or RUNNING mid-batch ("tool").
            midbatch = run.status is RunStatus.RUNNING and run.mode == "tool"
            if run.status is not RunStatus.PAUSED and not midbatch:
                problems.append(
                    f"{run.status.value} run in mode {run.mode!r} ends with a batch that "
                    "has no results"
                )
            continue
        ids = [c.call_id for c in m.tool_calls]
        if [a.call_id for a in answers] != ids:
            got = [a.call_id for a in answers]
            problems.append(f"half-written batch at message {n}: calls {ids}, results for {got}")
        missing = [c for c in ids if c not in executed]
        if missing:
            calls, have = ("call", "has") if len(missing) == 1 else ("calls", "have")
            problems.append(f"{calls} {missing} at message {n} {have} no tool execution row")
    return problems
