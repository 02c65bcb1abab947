"""Kills: the worker is SIGKILLed at a checkpoint boundary or inside a step.

after-checkpoint:K   checkpoint K of the session has landed, K+1 has not
mid-batch:K:I        tool batch K: calls before I finished, call I in flight (its effect
                     done, its result not back), later calls not started; before and
                     after in the order the runtime starts them (the baseline's trace)
mid-model:K          the request for model turn K was sent, no reply yet
mid-stream:K         model turn K's reply is streaming: half of its chunks sent, the rest
                     not (turns the runtime asks for with streaming only)
mid-commit:K         inside checkpoint K's (last) transaction, before COMMIT
"""

from __future__ import annotations

from killpoint.errors import PointError
from killpoint.judge.baseline import Baseline
from killpoint.kinds.base import CellContext, Plan, after_checkpoint, kill_at
from killpoint.scenarios import gates
from killpoint.values.points import CrashPoint
from killpoint.values.sentences import count, numbers


class AfterCheckpoint:
    name = "after-checkpoint"
    meaning = "checkpoint K has landed, K+1 has not; the worker is killed"
    label = "after checkpoint"
    kills = True
    arity = 1
    groups: tuple[str, ...] = ("boundaries", "kills", "all")
    follows = True
    copyable = True
    kept = True
    cuts = False
    sampled: int | None = None

    def points(self, base: Baseline) -> list[CrashPoint]:
        return [CrashPoint(self.name, k) for k in range(1, base.checkpoints)]

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        return after_checkpoint(base, point)

    def describe(self, point: CrashPoint) -> str:
        return f"checkpoint {point.k} has landed, {point.k + 1} has not; the worker is killed"

    def run(self, cell: CellContext, plan: Plan) -> None:
        kill_at(cell, plan)

    def unavailable(self, store_kind: str) -> str | None:
        return None


class MidBatch:
    name = "mid-batch"
    meaning = (
        "tool batch K: calls before I finished, call I in flight, the rest not started; killed"
    )
    label = "mid-batch K:I"
    kills = True
    arity = 2
    groups: tuple[str, ...] = ("kills", "all")
    follows = False
    copyable = True
    kept = True
    cuts = False
    sampled: int | None = None

    def points(self, base: Baseline) -> list[CrashPoint]:
        return [
            CrashPoint(self.name, b.number, i) for b in base.batches for i in range(len(b.calls))
        ]

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        batch = next((b for b in base.batches if b.number == point.k), None)
        if batch is None or point.i is None or not 0 <= point.i < len(batch.calls):
            raise PointError(
                f"killpoint: {point} is not in this baseline; its batches: "
                + (
                    ", ".join(f"{b.number} ({count(len(b.calls), 'call')})" for b in base.batches)
                    or "none"
                )
            )
        i = point.i
        # Call i has done its effect and is held before its result goes back; later calls
        # are held before they start; earlier calls run to the end. Earlier and later by
        # when the runtime starts them (the baseline's trace), not by call index: a runtime
        # that runs its calls one at a time, last first, would otherwise be held at a later
        # call's start while call i waits for it, and hang.
        calls = sorted(batch.calls, key=lambda c: base.position(c.started))
        call = calls[i]
        later = calls[i + 1 :]
        arm = (call.finished, *(c.started for c in later))
        # Waited for: the later calls the runtime starts while call i runs. One that runs
        # them after it (as the reference runtime runs calls that update the session state,
        # one at a time) starts none of them before call i ends: not started either way.
        finished_at = base.position(call.finished)
        concurrent = [c.started for c in later if base.position(c.started) < finished_at]
        run, started = base.run_at(batch.first_index)
        # A mode that makes each result durable on its own has one checkpoint per call done.
        done = base.landed_before(batch.first_index) + (i if base.per_call else 0)
        return Plan(
            point,
            arm,
            frozenset({call.finished, *concurrent}),
            done,
            run,
            started,
            finished_first=tuple(calls[:i]),
        )

    def describe(self, point: CrashPoint) -> str:
        i = point.i or 0
        before = f"{numbers('call', list(range(i)))} finished, " if i else ""
        return (
            f"tool batch {point.k}: {before}call {i} in flight (its effect done, its result "
            "not back), later calls not started; the worker is killed"
        )

    def run(self, cell: CellContext, plan: Plan) -> None:
        kill_at(cell, plan)

    def unavailable(self, store_kind: str) -> str | None:
        return None


class MidModel:
    name = "mid-model"
    meaning = "the request for model turn K was sent, no reply yet; the worker is killed"
    label = "mid-model"
    kills = True
    arity = 1
    groups: tuple[str, ...] = ("kills", "all")
    follows = True
    copyable = True
    kept = True
    cuts = False
    sampled: int | None = None

    def points(self, base: Baseline) -> list[CrashPoint]:
        return [CrashPoint(self.name, t) for t in base.turns]

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        gate = gates.model_gate(point.k)
        index = base.position(gate)
        run, started = base.run_at(index)
        return Plan(point, (gate,), frozenset({gate}), base.landed_before(index), run, started)

    def describe(self, point: CrashPoint) -> str:
        return f"the request for model turn {point.k} was sent, no reply yet; the worker is killed"

    def run(self, cell: CellContext, plan: Plan) -> None:
        kill_at(cell, plan)

    def unavailable(self, store_kind: str) -> str | None:
        return None


def stream_chunks(base: Baseline, turn: int) -> int:
    """How many chunks model turn `turn`'s streamed reply sent in the baseline (its first
    stream: a retried request streams again); 0 when the turn did not stream."""
    found = [
        g.chunk
        for e in base.trace
        if (g := gates.parse(e)) is not None
        and g.kind == "model"
        and g.phase == "chunk"
        and g.number == turn
        and g.occurrence == 1
        and g.chunk is not None
    ]
    return max(found, default=0)


class MidStream:
    name = "mid-stream"
    meaning = (
        "model turn K's reply is streaming: half of its chunks sent, the rest not; the "
        "worker is killed"
    )
    label = "mid-stream"
    kills = True
    arity = 1
    groups: tuple[str, ...] = ("kills", "all")
    follows = True
    # Real kills only: its gate (a chunk half-way through a stream) is not in the
    # baseline's trace to order a row's traced points by.
    copyable = False
    # A crash-state corpus keeps the boundary and in-step kills it has always kept; a
    # state half-way through a stream is the store at the turn's start (nothing lands
    # while the worker reads a reply), which mid-model keeps already.
    kept = False
    cuts = False
    sampled: int | None = None

    def points(self, base: Baseline) -> list[CrashPoint]:
        return [CrashPoint(self.name, t) for t in base.turns if stream_chunks(base, t) > 1]

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        chunks = stream_chunks(base, point.k)
        if chunks < 2:
            raise PointError(
                f"killpoint: {point}: model turn {point.k} did not stream in the baseline; "
                "mid-stream points stand only on turns the runtime asks for with streaming"
            )
        # Armed before the chunk after the first half (n-1 chunks are sent at gate n);
        # confirmed from what the store held when the stream began (nothing lands while
        # the worker reads a reply).
        gate = gates.chunk_gate(point.k, chunks // 2 + 1)
        index = base.position(gates.chunk_gate(point.k, 1))
        run, started = base.run_at(index)
        return Plan(point, (gate,), frozenset({gate}), base.landed_before(index), run, started)

    def describe(self, point: CrashPoint) -> str:
        return (
            f"model turn {point.k}'s reply is streaming, half of its chunks sent; the worker "
            "is killed"
        )

    def run(self, cell: CellContext, plan: Plan) -> None:
        kill_at(cell, plan)

    def unavailable(self, store_kind: str) -> str | None:
        return None


class MidCommit:
    name = "mid-commit"
    meaning = "inside checkpoint K's transaction, before COMMIT; the worker is killed"
    label = "mid-commit"
    kills = True
    arity = 1
    groups: tuple[str, ...] = ("kills", "all")
    follows = False
    copyable = True
    kept = True
    cuts = False
    sampled: int | None = None

    def points(self, base: Baseline) -> list[CrashPoint]:
        # Only checkpoints whose commit the adapter marks (a runtime without a commit hook
        # offers none).
        return [
            CrashPoint(self.name, k)
            for k in range(1, base.checkpoints + 1)
            if base.passed(gates.checkpoint_gate(k, "committing"))
        ]

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        k = point.k
        committing = gates.checkpoint_gate(k, "committing")
        # The last commit of checkpoint K: a checkpoint split over several transactions is
        # caught between them (the store then holds part of it).
        commits = [e for e in base.trace if gates.base_name(e) == committing]
        if not commits:
            raise PointError(
                f"killpoint: {point}: the baseline never committed checkpoint {k} "
                "(its adapter marks no commits, or it has fewer checkpoints)"
            )
        gate = commits[-1]
        run, started = base.run_at(base.position(gate))
        detail = ""
        if len(commits) > 1:
            n = len(commits)
            first = "its first transaction" if n == 2 else f"its first {n - 1} transactions"
            detail = (
                f"inside the last of checkpoint {k}'s {n} transactions, before its COMMIT: "
                f"{first} committed, after {count(k - 1, 'checkpoint')} landed; the worker "
                f"is killed (gate {gate}: its pass {n} in the process)"
            )
        return Plan(point, (gate,), frozenset({gate}), k - 1, run, started, detail=detail)

    def describe(self, point: CrashPoint) -> str:
        return (
            f"inside checkpoint {point.k}'s transaction, before COMMIT "
            f"({count(point.k - 1, 'checkpoint')} landed); the worker is killed"
        )

    def run(self, cell: CellContext, plan: Plan) -> None:
        kill_at(cell, plan)

    def unavailable(self, store_kind: str) -> str | None:
        return None


__all__ = ["AfterCheckpoint", "MidBatch", "MidCommit", "MidModel", "MidStream"]
