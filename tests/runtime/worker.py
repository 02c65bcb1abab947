"""A worker process for the crash and ownership tests: drives one run against a store.

    python -m tests.runtime.worker --url URL --mode tool-batch --run-id R --session-id S \
        --action run|continue [--batches N] [--size K] [--block-at N:I] [--gate] [--log PATH]

The model is the stateless `batch_replies` script served by respx at the HTTP layer, so
an uninterrupted run, a killed one and its continuation are served the same replies.
The worker talks to the test through stdout, one JSON event per line:

- `{"event": "waiting"}` with --gate: it then waits for one line on stdin before acting;
- `{"event": "ready", "key": ...}` when the call N:I of --block-at runs (checkpoint N-1 has
  landed; in "tool" mode the other calls of batch N have landed too); the call then blocks
  until a line arrives on stdin, or forever if the test kills the process instead;
- `{"event": "result", ...}` or `{"event": "error", "type": ..., "message": ...}` at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from killpoint.runtime import Agent, RunOutput, RunStatus, Store
from killpoint.runtime.errors import RuntimeErrorBase
from tests.helpers import batch_replies, make_model, mock_openai

AGENT_NAME = "crash-worker"


def emit(event: dict[str, Any]) -> None:
    sys.stdout.write(json.dumps(event) + "\n")
    sys.stdout.flush()


def wait_for_siblings(url: str, run_id: str, batch: int, size: int) -> None:
    """Wait (polling the store's rows, with a deadline) until the other calls of `batch`
    have their results persisted: in "tool" mode each lands in its own checkpoint."""
    store = Store(url)
    deadline = time.monotonic() + 30
    try:
        while time.monotonic() < deadline:
            run = store.read_run(run_id)
            done = [] if run is None else [e for e in run.tool_executions if e.turn == batch]
            if len(done) == size - 1:
                return
            time.sleep(0.01)
        raise TimeoutError(f"worker: the other calls of batch {batch} never landed")
    finally:
        store.dispose()


def build_agent(
    url: str,
    mode: str,
    *,
    size: int,
    block_at: tuple[int, int] | None = None,
    log_path: str | None = None,
    lease_seconds: float = 30.0,
) -> Agent:
    """The agent every crash test drives: one tool, `step(n, i)`, that costs nothing."""

    def step(n: int, i: int, idempotency_key: str, run_id: str) -> str:
        """Do step i of batch n (free of cost and side effects, except the log line)."""
        if log_path:
            with open(log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps({"key": idempotency_key, "pid": os.getpid()}) + "\n")
        if block_at == (n, i):
            if mode == "tool":
                wait_for_siblings(url, run_id, n, size)
            emit({"event": "ready", "key": idempotency_key})
            sys.stdin.readline()  # the test releases us with a line, or kills us
        return f"step {n}.{i} done ({idempotency_key})"

    return Agent(
        AGENT_NAME,
        make_model(),
        url,
        tools=[step],
        instructions="Run every step you are given.",
        checkpoint=mode,
        lease_seconds=lease_seconds,
    )


def reference_run(
    path: Path, mode: str, run_id: str, session_id: str, batches: int = 4, size: int = 2
) -> RunOutput:
    """The run as it goes when nothing kills it: in this process, on its own SQLite file,
    with the same run id (tool results carry idempotency keys, which carry the run id)."""
    with mock_openai() as router:
        router.post("/responses").mock(side_effect=batch_replies(batches, size))
        out = build_agent(f"sqlite:///{path}", mode, size=size).run(
            "run the steps", session_id=session_id, run_id=run_id
        )
    if out.status is not RunStatus.COMPLETED:
        raise AssertionError(f"the reference run ended {out.status}: {out.error}")
    return out


def result_event(out: RunOutput) -> dict[str, Any]:
    return {
        "event": "result",
        "pid": os.getpid(),
        "run_id": out.run_id,
        "session_id": out.session_id,
        "status": out.status.value,
        "checkpoints": out.checkpoints,
        "messages": [m.to_json() for m in out.messages],
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.runtime.worker")
    parser.add_argument("--url", required=True)
    parser.add_argument("--mode", required=True)
    parser.add_argument("--run-id", required=True)
    parser.add_argument("--session-id", required=True)
    parser.add_argument("--action", choices=("run", "continue"), required=True)
    parser.add_argument("--batches", type=int, default=4)
    parser.add_argument("--size", type=int, default=2)
    parser.add_argument("--block-at", default=None, help="N:I, the call that blocks")
    parser.add_argument("--gate", action="store_true", help="wait for a stdin line first")
    parser.add_argument("--log", default=None, help="append one line per tool execution")
    parser.add_argument("--lease", type=float, default=30.0)
    args = parser.parse_args(argv)

    block_at = None
    if args.block_at:
        n, i = args.block_at.split(":")
        block_at = (int(n), int(i))
    agent = build_agent(
        args.url,
        args.mode,
        size=args.size,
        block_at=block_at,
        log_path=args.log,
        lease_seconds=args.lease,
    )
    agent.db.create_schema()  # import and connect before the gate opens
    if args.gate:
        emit({"event": "waiting", "pid": os.getpid()})
        sys.stdin.readline()
    with mock_openai(assert_all_called=False) as router:
        router.post("/responses").mock(side_effect=batch_replies(args.batches, args.size))
        try:
            if args.action == "run":
                out = agent.run("run the steps", session_id=args.session_id, run_id=args.run_id)
            else:
                out = agent.continue_run(args.run_id, args.session_id)
        except RuntimeErrorBase as exc:
            emit(
                {
                    "event": "error",
                    "pid": os.getpid(),
                    "type": type(exc).__name__,
                    "message": str(exc),
                }
            )
            return 3
    emit(result_event(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
