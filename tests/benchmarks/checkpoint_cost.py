"""Checkpoint cost over a long run: does a checkpoint cost the same at batch 1,000 as at batch 5?

    python -m tests.benchmarks.checkpoint_cost [--batches 1000] [--repeat 3] [--http]
                                              [--synchronous FULL] [--db PATH]
    make bench

One "tool-batch" run of N zero-cost batches (one call each) on a SQLite file, repeated
(default 3 runs, each on a new file). Every Store.write_checkpoint call is timed; per
checkpoint the median over the runs is kept (a single slow fsync then moves nothing), and
the script prints the median of checkpoints 5-15 and of checkpoints 990-1000 and their
ratio. Target: ratio <= 1.5 (append-only checkpoints keep the cost flat). A runtime that
rewrites the whole run per checkpoint grows 6-7x between batch 5 and batch 200. This
prints figures; it is not a timed test and always exits 0.

By default the model is an in-process object with OpenAIResponses' `respond()` signature,
because serving 1,000 growing conversations through the SDK and the HTTP mock dominates the
wall time (it never enters the measured window: 200 batches over HTTP take about 45 s,
1,000 take many minutes). `--http` uses the real OpenAIResponses over the SDK, served by
respx.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from killpoint.runtime import Agent, Message, RunStatus, Store, ToolCall, Usage
from killpoint.runtime.model import ModelReply
from killpoint.runtime.store import Checkpoint

EARLY = (5, 15)
LATE = (990, 1000)
TARGET = 1.5


class ZeroCostModel:
    """Batch k asks for one call of `noop`; after the last batch it answers. No HTTP."""

    id = "zero-cost"

    def __init__(self, batches: int) -> None:
        self.batches = batches
        self.turns = 0

    async def respond(
        self,
        messages: Sequence[Message],
        *,
        instructions: str | None,
        tools: Sequence[dict[str, Any]],
    ) -> ModelReply:
        self.turns += 1
        k = self.turns
        if k > self.batches:
            message = Message(role="assistant", content="done", response_id=f"resp_{k}")
        else:
            message = Message(
                role="assistant",
                tool_calls=(ToolCall(f"call_{k}", "noop", "{}"),),
                response_id=f"resp_{k}",
            )
        return ModelReply(message=message, usage=Usage(1, 1, 2, 1))


class TimedStore(Store):
    """The real store; each write_checkpoint call is timed (perf_counter, seconds)."""

    def __init__(self, url: str, *, synchronous: str = "FULL") -> None:
        super().__init__(url, synchronous=synchronous)
        self.times: list[float] = []

    def write_checkpoint(self, cp: Checkpoint) -> int:
        start = time.perf_counter()
        version = super().write_checkpoint(cp)
        self.times.append(time.perf_counter() - start)
        return version


async def noop() -> str:
    """Do nothing, at no cost."""
    return "ok"


def run(
    db: Path, batches: int, http: bool, synchronous: str = "FULL"
) -> tuple[TimedStore, float, str]:
    """One whole run on a new SQLite file; returns the timed store, wall time and model label."""
    store = TimedStore(f"sqlite:///{db}", synchronous=synchronous)
    if http:
        from tests.helpers import make_model, mock_openai

        model: Any = make_model()
        label = "OpenAIResponses over the SDK, served by respx (HTTP mock)"
    else:
        model = ZeroCostModel(batches)
        label = "in-process fake with respond()'s signature (HTTP bypassed)"
    agent = Agent("bench", model, store, tools=[noop], checkpoint="tool-batch")
    start = time.perf_counter()
    if http:
        with mock_openai() as router:
            router.post("/responses").mock(side_effect=_single_call_replies(batches))
            out = asyncio.run(agent.arun("go"))
    else:
        out = asyncio.run(agent.arun("go"))
    elapsed = time.perf_counter() - start
    if out.status is not RunStatus.COMPLETED:
        raise SystemExit(f"benchmark run ended {out.status}: {out.error}")
    return store, elapsed, label


def _single_call_replies(batches: int) -> Any:
    from tests.helpers import batch_replies

    return batch_replies(batches, 1)


def window(times: list[float], first: int, last: int) -> list[float]:
    """Checkpoints first..last, 1-based and inclusive."""
    return times[first - 1 : last]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.checkpoint_cost")
    parser.add_argument("--batches", type=int, default=1000)
    parser.add_argument("--http", action="store_true", help="go through the SDK and respx")
    parser.add_argument("--db", type=Path, default=None, help="SQLite file (default: temp)")
    parser.add_argument("--repeat", type=int, default=3, help="whole runs to take medians over")
    parser.add_argument(
        "--synchronous",
        default="FULL",
        choices=("OFF", "NORMAL", "FULL", "EXTRA"),
        help="SQLite synchronous level (the runtime's default is FULL)",
    )
    args = parser.parse_args(argv)
    late = (min(LATE[0], args.batches - 10), min(LATE[1], args.batches))
    if late[0] <= EARLY[1]:
        parser.error(f"--batches must be more than {EARLY[1] + 10}")

    runs: list[list[float]] = []
    elapsed: list[float] = []
    label = ""
    for r in range(args.repeat):
        with tempfile.TemporaryDirectory(prefix="kp-bench-") as tmp:
            db = args.db.with_suffix(f".{r}.db") if args.db else Path(tmp) / "bench.db"
            store, seconds, label = run(db, args.batches, args.http, args.synchronous)
            store.dispose()
        runs.append(store.times)
        elapsed.append(seconds)
    # Per checkpoint, the median over the repeats: one slow fsync does not move a window.
    times = [statistics.median(ts) for ts in zip(*runs, strict=True)]
    early = statistics.median(window(times, *EARLY))
    late_median = statistics.median(window(times, *late))
    ratio = late_median / early
    print(
        f'killpoint checkpoint cost: "tool-batch" runs on SQLite (WAL, synchronous={args.synchronous})'
    )
    print(f"  batches            {args.batches} zero-cost batches of one call")
    print(f"  model              {label}")
    print(f"  checkpoints        {len(times)} per run (the last is the COMPLETED write)")
    print(f"  runs               {args.repeat}; per checkpoint, the median over the runs")
    print(f"  run wall time      {', '.join(f'{e:.2f} s' for e in elapsed)}")
    print(f"  median cp {EARLY[0]}-{EARLY[1]:<8} {early * 1e3:8.3f} ms")
    print(f"  median cp {late[0]}-{late[1]:<6} {late_median * 1e3:8.3f} ms")
    for mark in (100, 500):
        if mark + 10 <= args.batches:
            print(
                f"  median cp {mark}-{mark + 10:<7} {statistics.median(window(times, mark, mark + 10)) * 1e3:8.3f} ms"
            )
    verdict = "within" if ratio <= TARGET else "ABOVE"
    print(f"  ratio late/early   {ratio:.2f} ({verdict} the target of <= {TARGET})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
