"""Shared test helpers: Responses API bodies, scripted replies, store snapshots, worker processes.

Nothing here fakes the store or the SDK: replies are served at the HTTP layer by respx
(through the httpx2 mocker in `killpoint.scenarios.http_mock`), stores are real SQLite files or
real PostgreSQL databases.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
import respx
from sqlalchemy import select as sql_select

import killpoint.scenarios.http_mock  # noqa: F401  (registers respx's "httpx2" mocker)
from killpoint.runtime import Message, OpenAIResponses, Store
from killpoint.runtime.store import schema

REPO_ROOT = Path(__file__).resolve().parent.parent
BASE_URL = "https://api.openai.com/v1"
MODEL_ID = "gpt-killpoint-test"
TEST_API_KEY = "sk-test-not-a-real-key"

JSONDict = dict[str, Any]

# -- Responses API bodies ------------------------------------------------------------------


def function_call(call_id: str, name: str, arguments: dict[str, Any] | str) -> JSONDict:
    """A `function_call` output item; arguments travel as a JSON string, as the API sends them."""
    args = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": args,
        "status": "completed",
    }


def message_item(text: str, item_id: str = "msg_1") -> JSONDict:
    """An assistant `message` output item with one `output_text` part."""
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def usage_block(input_tokens: int = 10, output_tokens: int = 5) -> JSONDict:
    return {
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "total_tokens": input_tokens + output_tokens,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens_details": {"reasoning_tokens": 0},
    }


def response_body(
    output: Sequence[JSONDict], *, response_id: str = "resp_1", usage: JSONDict | None = None
) -> JSONDict:
    """A whole `POST /responses` reply body."""
    return {
        "id": response_id,
        "object": "response",
        "created_at": 1_700_000_000,
        "model": MODEL_ID,
        "status": "completed",
        "output": list(output),
        "usage": usage if usage is not None else usage_block(),
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


def json_response(body: JSONDict, status: int = 200) -> httpx.Response:
    """A JSON response encoded with ASCII escapes, so lone surrogates survive the wire
    (httpx's own `json=` encodes UTF-8, which cannot carry them)."""
    return httpx.Response(
        status,
        content=json.dumps(body, ensure_ascii=True).encode("ascii"),
        headers={"content-type": "application/json"},
    )


def error_response(status: int, message: str = "scripted failure") -> httpx.Response:
    return json_response(
        {"error": {"message": message, "type": "server_error", "code": None}}, status
    )


def input_items(request: httpx.Request) -> list[JSONDict]:
    """The `input` list the SDK sent."""
    items = json.loads(request.content)["input"]
    return [{"role": "user", "content": items}] if isinstance(items, str) else list(items)


# -- scripted replies ------------------------------------------------------------------------

# One scripted turn: output items (200), an HTTP status (error body), a ready response,
# or a callable that receives the request and returns any of those.
Reply = Sequence[JSONDict] | int | httpx.Response | Callable[[httpx.Request], Any]


@dataclass
class ScriptedModel:
    """Serves scripted replies in order and records every request it received.

    Use as a respx side effect: `router.post("/responses").mock(side_effect=script)`.
    Running out of replies is a test failure (an AssertionError surfaces from the SDK call).
    """

    replies: list[Reply]
    requests: list[httpx.Request] = field(default_factory=list)

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        n = len(self.requests)
        assert n <= len(self.replies), f"scripted model: request {n} but only {len(self.replies)}"
        return to_response(self.replies[n - 1], request, response_id=f"resp_{n}")

    @property
    def inputs(self) -> list[list[JSONDict]]:
        return [input_items(r) for r in self.requests]


def to_response(reply: Reply, request: httpx.Request, *, response_id: str) -> httpx.Response:
    if callable(reply):
        return to_response(reply(request), request, response_id=response_id)
    if isinstance(reply, httpx.Response):
        return reply
    if isinstance(reply, int):
        return error_response(reply)
    return json_response(response_body(reply, response_id=response_id))


def serve(router: respx.MockRouter, replies: Sequence[Reply]) -> tuple[respx.Route, ScriptedModel]:
    """Route `POST /responses` to a ScriptedModel; returns the route and the script."""
    script = ScriptedModel(list(replies))
    route = router.post("/responses").mock(side_effect=script)
    return route, script


def batch_replies(batches: int, size: int, final: str = "all batches done") -> Callable[..., Any]:
    """A stateless scripted model: `batches` tool batches of `size` calls of `step(n, i)`, then
    a final message. The reply depends only on how many function calls the request's input
    already holds, so a resumed process is served exactly what an uninterrupted one is."""

    def reply(request: httpx.Request) -> httpx.Response:
        done = sum(1 for it in input_items(request) if it.get("type") == "function_call")
        assert done % size == 0, f"batch_replies: {done} calls seen, not a multiple of {size}"
        k = done // size + 1
        if k > batches:
            output = [message_item(final, item_id=f"msg_{k}")]
        else:
            output = [function_call(f"call_{k}_{i}", "step", {"n": k, "i": i}) for i in range(size)]
        return json_response(
            response_body(output, response_id=f"resp_{k}", usage=usage_block(k, 1))
        )

    return reply


def mock_openai(*, assert_all_called: bool = True) -> respx.MockRouter:
    """The respx router every test uses: httpx2 transports patched, nothing unrouted escapes."""
    return respx.mock(
        using="httpx2",
        assert_all_mocked=True,
        assert_all_called=assert_all_called,
        base_url=BASE_URL,
    )


def make_model(*, api_key: str = TEST_API_KEY, max_retries: int = 0) -> OpenAIResponses:
    """A Responses model on the SDK's default client: explicit key, no retries."""
    return OpenAIResponses(MODEL_ID, api_key=api_key, max_retries=max_retries)


# -- store snapshots -------------------------------------------------------------------------


def snapshot(url: str) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every runtime table, ordered by primary key, read with a fresh engine."""
    store = Store(url)
    try:
        store.create_schema()
        with store.reading() as conn:
            return {
                t.name: [
                    tuple(row)
                    for row in conn.execute(
                        sql_select(t).order_by(*(list(t.primary_key.columns) or list(t.columns)))
                    )
                ]
                for t in schema.metadata.sorted_tables
            }
    finally:
        store.dispose()


def project(messages: Sequence[Message]) -> list[JSONDict]:
    """What two runs must agree on: role, content, tool calls, and which call a result answers."""
    return [
        {
            "role": m.role,
            "content": m.content,
            "tool_calls": [(c.call_id, c.name, c.arguments) for c in m.tool_calls],
            "call_id": m.call_id,
            "name": m.name,
            "status": m.status,
        }
        for m in messages
    ]


# -- worker processes -----------------------------------------------------------------------


class LineReader:
    """Reads newline-terminated JSON events from a pipe with a deadline (select, no sleeps)."""

    def __init__(self, fd: int, name: str) -> None:
        self.fd = fd
        self.name = name
        self.buffer = b""
        self.eof = False

    def read_event(self, timeout: float = 60.0) -> JSONDict:
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buffer:
            if self.eof:
                raise EOFError(f"{self.name}: stdout closed; partial output {self.buffer!r}")
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError(f"{self.name}: no event within {timeout}s")
            ready, _, _ = select.select([self.fd], [], [], left)
            if ready:
                chunk = os.read(self.fd, 65536)
                if chunk:
                    self.buffer += chunk
                else:
                    self.eof = True
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)


@dataclass
class Worker:
    """A `tests.runtime.worker` process in its own session (process group)."""

    proc: subprocess.Popen[bytes]
    reader: LineReader
    stderr_path: Path

    def event(self, timeout: float = 60.0) -> JSONDict:
        try:
            return self.reader.read_event(timeout)
        except (EOFError, TimeoutError) as exc:
            raise AssertionError(f"{exc}\n--- worker stderr ---\n{self.stderr()}") from None

    def send(self, line: str = "") -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(line.encode() + b"\n")
        self.proc.stdin.flush()

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")[-4000:]

    def wait(self, timeout: float = 60.0) -> int:
        return self.proc.wait(timeout=timeout)


def kill_tree(proc: subprocess.Popen[bytes]) -> int:
    """SIGKILL the process, its process group and every descendant; reap; return the code."""
    if proc.poll() is None:
        try:
            kids = psutil.Process(proc.pid).children(recursive=True)
        except psutil.NoSuchProcess:
            kids = []
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        for kid in kids:
            with suppress(psutil.NoSuchProcess):
                kid.kill()
    code = proc.wait()
    for stream in (proc.stdin, proc.stdout):
        if stream is not None:
            with suppress(OSError):
                stream.close()
    return code


@contextmanager
def worker(
    args: Sequence[str], stderr_path: Path, env: dict[str, str] | None = None
) -> Iterator[Worker]:
    """Start `python -m tests.runtime.worker ARGS`; always killed and reaped on exit."""
    full_env = {**os.environ, **(env or {})}
    full_env.pop("OPENAI_API_KEY", None)
    full_env["PYTHONPATH"] = os.pathsep.join(
        p for p in (str(REPO_ROOT), full_env.get("PYTHONPATH", "")) if p
    )
    with open(stderr_path, "wb") as err:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tests.runtime.worker", *args],
            cwd=REPO_ROOT,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=err,
            env=full_env,
            start_new_session=True,
            bufsize=0,
        )
    assert proc.stdout is not None
    try:
        yield Worker(proc, LineReader(proc.stdout.fileno(), f"worker {proc.pid}"), stderr_path)
    finally:
        kill_tree(proc)


def worker_args(
    url: str,
    mode: str,
    run_id: str,
    session_id: str,
    action: str,
    *,
    batches: int = 4,
    size: int = 2,
    block_at: str | None = None,
    gate: bool = False,
    log: Path | None = None,
    lease: float | None = None,
) -> list[str]:
    """Command-line arguments of `tests.runtime.worker`."""
    args = [
        f"--url={url}",
        f"--mode={mode}",
        f"--run-id={run_id}",
        f"--session-id={session_id}",
        f"--action={action}",
        f"--batches={batches}",
        f"--size={size}",
    ]
    if block_at:
        args.append(f"--block-at={block_at}")
    if gate:
        args.append("--gate")
    if log is not None:
        args.append(f"--log={log}")
    if lease is not None:
        args.append(f"--lease={lease}")
    return args


def executed_keys(log: Path) -> list[tuple[str, int]]:
    """(idempotency key, pid) of every tool execution a worker logged, in order."""
    if not log.exists():
        return []
    lines = log.read_text(encoding="utf-8").splitlines()
    return [(d["key"], d["pid"]) for d in map(json.loads, lines)]


@dataclass
class Crash:
    """What a crashed worker left: its announcement, the store as it was at the kill, and
    the exit status the kill produced."""

    ready: JSONDict
    run_at_kill: Any  # StoredRun | None
    session_at_kill: JSONDict | None
    returncode: int


def crash_after_checkpoint(
    url: str,
    mode: str,
    run_id: str,
    session_id: str,
    tmp_path: Path,
    *,
    block_at: str = "3:0",
    log: Path | None = None,
) -> Crash:
    """Start a worker, wait for it to announce `block_at` through its stdout pipe (no sleep),
    read the store while the worker is blocked, then SIGKILL its process group and reap it."""
    args = worker_args(url, mode, run_id, session_id, "run", block_at=block_at, log=log)
    with worker(args, tmp_path / f"crash-{run_id}.stderr") as w:
        ready = w.event()
        store = Store(url)
        try:
            run, session = store.read_run(run_id), store.read_session(session_id)
        finally:
            store.dispose()
        code = kill_tree(w.proc)
    return Crash(ready=ready, run_at_kill=run, session_at_kill=session, returncode=code)


@contextmanager
def mounted_tmpfs(folder: Path, size: str) -> Iterator[Path]:
    """A tmpfs of `size` (e.g. "4m") mounted at `folder`: a filesystem that fills up for
    real. Skips without root or where mounting is refused."""
    import pytest

    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill needs root (mount -t tmpfs)")
    folder.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
