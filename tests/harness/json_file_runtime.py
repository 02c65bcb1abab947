"""jsonagent: a small durable agent runtime whose store is one JSON file, rewritten at
every checkpoint, and its killpoint adapters, one per way of writing the file:

- `adapter`: in place, never synced (`open(path, "w").write(...)`, the usual first
  version): a process crash leaves the write whole in the page cache, so every kill
  resumes; a power cut keeps what was synced, and torn writes keep the first sectors of
  the last write over the old file's bytes: the file no longer parses.
- `in_place_synced`: in place, fsynced before the caller hears of the checkpoint: whole
  at rest, torn only by a cut during the write itself.

Each creates its empty file durably first (file and folder entry synced), so what a cut
finds is the way checkpoints are written, not a file that was never durable.
- `atomic`: a temporary file, fsynced, renamed over the store, the folder fsynced: the fix.

`--runtime tests.harness.json_file_runtime:adapter` (and `:in_place_synced`, `:atomic`).
"""

from __future__ import annotations

import asyncio
import inspect
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import openai

import killpoint
from killpoint import CheckpointGates, Ledger, Mode, RunResult, Scenario, ToolEnv
from killpoint.stores.sqlite import path_of

FILE = "runs.json"


@dataclass
class Run:
    run_id: str
    session_id: str
    status: str = "RUNNING"
    content: str | None = None
    messages: list[dict[str, Any]] = field(default_factory=list)
    executions: list[dict[str, Any]] = field(default_factory=list)
    checkpoints: int = 0


class JsonStore:
    """Every run of every session in one JSON document."""

    def __init__(self, folder: Path, gates: CheckpointGates | None, how: str) -> None:
        self.path = folder / FILE
        self.gates = gates
        self.how = how  # "in-place" | "in-place-synced" | "atomic"

    def create(self) -> None:
        """The empty store, made durable once, file and folder entry alike: every way of
        writing below starts from a file that a power cut keeps."""
        if self.path.exists():
            return
        tmp = self.path.with_name(f".{FILE}.new")
        _write_file(tmp, b"{}", sync=True)
        os.rename(tmp, self.path)
        _sync_folder(self.path.parent)

    def runs(self) -> dict[str, dict[str, Any]]:
        if not self.path.exists():
            return {}
        return dict(json.loads(self.path.read_bytes() or b"{}"))

    def save(self, run: Run) -> None:
        runs = self.runs()
        runs[run.run_id] = {**asdict(run), "checkpoints": run.checkpoints + 1}
        data = json.dumps(runs, indent=1).encode()
        if self.gates is None:
            self._write(data)
        else:
            with self.gates.write():
                self._write(data)
        run.checkpoints += 1

    def _commit(self) -> None:
        # The instant after which a process crash leaves the new checkpoint in the store.
        if self.gates is not None:
            self.gates.committing()

    def _write(self, data: bytes) -> None:
        if self.how == "atomic":
            tmp = self.path.with_name(f".{FILE}.tmp")
            _write_file(tmp, data, sync=True)
            self._commit()
            os.rename(tmp, self.path)
            _sync_folder(self.path.parent)
            return
        self._commit()
        _write_file(self.path, data, sync=self.how == "in-place-synced")

    def load(self, run_id: str) -> Run | None:
        found = self.runs().get(run_id)
        return None if found is None else Run(**found)


def _write_file(path: Path, data: bytes, *, sync: bool) -> None:
    # What `Path.write_bytes` does: truncate on open, then write from the start.
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def _sync_folder(folder: Path) -> None:
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class ModelFailed(Exception):
    """The model answered with an error, or not at all (a client other than the SDK's)."""


class Agent:
    def __init__(
        self, store: JsonStore, tools: list[Callable[..., Any]], mode: str, retries: int
    ) -> None:
        self.store, self.mode = store, mode
        self.tools = {fn.__name__: fn for fn in tools}
        self.client = openai.AsyncOpenAI(api_key="sk-scripted", max_retries=retries)

    async def start(self, session_id: str, run_id: str, text: str) -> Run:
        message = {"role": "user", "content": text, "tool_calls": []}
        return await self._loop(Run(run_id, session_id, messages=[message]))

    async def resume(self, run_id: str) -> Run:
        run = self.store.load(run_id)
        if run is None:
            raise KeyError(f"jsonagent: no run {run_id!r}")
        return run if run.status == "COMPLETED" else await self._loop(run)

    async def ask(self, messages: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
        """The model's next reply: its text, and its calls ({call_id, name, arguments}).
        Raises ModelFailed (or the SDK's APIError) when the model fails."""
        reply = await self.client.responses.create(model="gpt-4.1-mini", input=_as_input(messages))
        calls = [item for item in reply.output if item.type == "function_call"]
        return reply.output_text or None, [
            {"call_id": c.call_id, "name": c.name, "arguments": c.arguments} for c in calls
        ]

    async def _loop(self, run: Run) -> Run:
        run.status = "RUNNING"
        while True:
            try:
                text, calls = await self.ask(run.messages)
            except (openai.APIError, ModelFailed) as exc:
                return self._end(run, "ERROR", f"model error: {exc}")
            run.messages.append({"role": "assistant", "content": text, "tool_calls": calls})
            if not calls:
                return self._end(run, "COMPLETED", text)
            turn = sum(1 for m in run.messages if m["role"] == "assistant")
            results = await asyncio.gather(*(self._call(run, c) for c in calls))
            for index, (call, result) in enumerate(zip(calls, results, strict=True)):
                run.messages.append(
                    {
                        "role": "tool",
                        "content": result,
                        "tool_calls": [],
                        "call_id": call["call_id"],
                    }
                )
                run.executions.append(
                    {"name": call["name"], "arguments": call["arguments"], "turn": turn,
                     "call_index": index, "result": result}
                )  # fmt: skip
            if self.mode == "every-batch":
                self.store.save(run)

    def _end(self, run: Run, status: str, content: str | None) -> Run:
        run.status, run.content = status, content
        self.store.save(run)
        return run

    async def _call(self, run: Run, call: dict[str, Any]) -> str:
        fn = self.tools[call["name"]]
        kwargs = json.loads(call["arguments"] or "{}")
        if "idempotency_key" in inspect.signature(fn).parameters:
            kwargs["idempotency_key"] = f"{run.run_id}/{call['call_id']}"
        try:
            if inspect.iscoroutinefunction(fn):
                return str(await fn(**kwargs))
            return str(await asyncio.to_thread(fn, **kwargs))
        except Exception as exc:
            return f"error: {exc}"


def _as_input(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == "tool":
            items.append(
                {"type": "function_call_output", "call_id": m["call_id"], "output": m["content"]}
            )
            continue
        if m["content"]:
            items.append({"role": m["role"], "content": m["content"]})
        items += [{"type": "function_call", **c} for c in m["tool_calls"]]
    return items


class JsonDriver:
    def __init__(self, agent: Agent) -> None:
        self.agent = agent

    async def start(self, input: str, *, session_id: str, run_id: str) -> RunResult:
        run = await self.agent.start(session_id, run_id, input)
        return RunResult(run_id=run.run_id, status=run.status, content=run.content)

    async def resume(
        self, run_id: str, *, session_id: str, confirmations: Mapping[str, bool]
    ) -> RunResult:
        run = await self.agent.resume(run_id)
        return RunResult(run_id=run.run_id, status=run.status, content=run.content)

    def cancel(self, run_id: str) -> None:
        raise NotImplementedError("jsonagent has no cancel (the adapter declines it)")


MODES = (
    Mode("every-batch", "the whole file rewritten after every tool batch and at the run's end"),
    Mode("at-end", "the file written once, when the run ends", persists_mid_run=False),
)


class JsonAdapter(killpoint.RuntimeAdapter):
    name = "jsonagent"
    modes = MODES
    excluded = ("call_id",)
    preload_modules = ("openai",)
    how = "in-place"

    def __init__(self) -> None:
        self.gates: CheckpointGates | None = None

    def instrument(self, checkpoints: CheckpointGates) -> None:
        self.gates = checkpoints

    def driver(
        self, scenario: Scenario, store_url: str, mode: str, ledger: Ledger, *, lease_seconds: float
    ) -> JsonDriver:
        store = JsonStore(Path(path_of(store_url)).parent, self.gates, self.how)
        store.create()
        tools = scenario.build_tools(ToolEnv(ledger))
        return JsonDriver(Agent(store, tools, mode, scenario.max_retries))

    def unsupported(self, scenario: Scenario, mode: str) -> str | None:
        if scenario.confirm or scenario.cancel_at_turn is not None:
            return "jsonagent has no tool confirmations and no cancel"
        if scenario.state_invariant is not None:
            return "jsonagent keeps no session state"
        if len(scenario.inputs) > 1:
            return "jsonagent starts every run afresh: a session's later runs do not see its earlier ones"
        return None

    def _runs(self, store_url: str, session_id: str) -> list[dict[str, Any]]:
        try:
            runs = JsonStore(Path(path_of(store_url)).parent, None, self.how).runs()
        except ValueError:
            return []  # not JSON: inspect() says so, and the cell is judged on that
        return [r for r in runs.values() if r["session_id"] == session_id]

    def progress(self, store_url: str, session_id: str) -> int:
        return sum(int(r["checkpoints"]) for r in self._runs(store_url, session_id))

    def read_session(self, store_url: str, session_id: str) -> killpoint.Session | None:
        found = self._runs(store_url, session_id)
        if not found:
            return None
        runs = {
            r["run_id"]: {
                "status": r["status"],
                "content": r["content"],
                "messages": r["messages"],
                "tool_executions": r["executions"],
                "last_checkpoint_at_message_index": len(r["messages"]),
            }
            for r in found
        }
        return {"state": None, "runs": runs}

    def inspect(self, store_url: str, session_id: str) -> list[str | killpoint.Finding]:
        path = Path(path_of(store_url)).parent / FILE
        try:
            JsonStore(path.parent, None, self.how).runs()
        except ValueError as exc:
            size = path.stat().st_size if path.exists() else 0
            return [f"{FILE} ({size} bytes) is not valid JSON: {exc}"]
        return []


class SyncedJsonAdapter(JsonAdapter):
    name = "jsonagent-in-place-synced"
    how = "in-place-synced"


class AtomicJsonAdapter(JsonAdapter):
    name = "jsonagent-atomic"
    how = "atomic"


adapter = JsonAdapter()
in_place_synced = SyncedJsonAdapter()
atomic = AtomicJsonAdapter()
