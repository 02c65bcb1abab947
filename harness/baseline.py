"""The baseline: a scenario run without faults, and what its trace says about every crash point.

A baseline worker runs with every gate traced (none armed), so its trace is the
ordered list of points the run passed: run starts, model turns, tool calls,
checkpoints committing and landed. Each crash point is planned from it: which
gates to arm, how many checkpoints the store must hold when the point is
reached, which run is in flight, and how many duplicate effects a resume may
legitimately cause.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from killpoint.scenarios import gates
from killpoint.scenarios.conversation import canonical_arguments
from killpoint.scenarios.ledger import Entry

from .points import CrashPoint, PointError


def _is(event: str, kind: str, phase: str | None = None) -> gates.Gate | None:
    """The parsed gate when `event` is a `kind` gate (of `phase`), else None."""
    gate = gates.parse(event)
    if gate is None or gate.kind != kind or (phase is not None and gate.phase != phase):
        return None
    return gate


def _landed(event: str) -> bool:
    gate = _is(event, "checkpoint", "landed")
    return gate is not None and gate.occurrence == 1


def effects(entries: list[Entry]) -> Counter[tuple[str, str]]:
    """Effective executions per (tool, canonical arguments)."""
    return Counter(e.signature for e in entries if e.phase == "started" and e.effect)


@dataclass(frozen=True)
class Call:
    tool: str
    arguments: str  # canonical JSON
    started: str  # full gate names, with the occurrence suffix the trace gave them
    finished: str
    occurrence: int  # how many executions of (tool, arguments) up to and including this one


@dataclass(frozen=True)
class Batch:
    number: int  # 1-based, over the session
    turn: int  # the model turn that asked for it
    calls: tuple[Call, ...]
    first_index: int  # where in the trace its first call started


@dataclass(frozen=True)
class Plan:
    """How to reach one crash point and what must hold there."""

    point: CrashPoint
    arm: tuple[str, ...]  # gates the worker arms
    wait_for: frozenset[str]  # gates that must be announced before the kill
    checkpoints: int  # checkpoints of the session in the store at the point
    run_index: int  # 0-based: the run in flight
    run_started_at: int  # checkpoints of the session when that run started
    finished_first: tuple[Call, ...] = ()  # calls whose effects must be done before the kill

    @property
    def expects_loss(self) -> bool:
        """Nothing of the run in flight was durable yet: losing it breaks no promise."""
        return self.checkpoints == self.run_started_at


@dataclass
class Baseline:
    runtime: str
    scenario: str
    mode: str
    store: str
    session: dict[str, Any] | None = None
    effects: Counter[tuple[str, str]] = field(default_factory=Counter)
    trace: list[str] = field(default_factory=list)
    results: list[dict[str, Any]] = field(default_factory=list)
    problem: str | None = None  # the baseline itself failed
    problem_verdict: str = "missed"  # "lost" when it acknowledged what is not durable
    nondeterministic: str | None = None  # two baselines differ: where
    seconds: float = 0.0
    batches: list[Batch] = field(default_factory=list)

    # -- analysis -----------------------------------------------------------------------

    def analyse(self) -> None:
        self.batches = self._batches()

    def _index(self, name: str) -> int:
        try:
            return self.trace.index(name)
        except ValueError:
            raise PointError(f"killpoint: the baseline never passed {name!r}") from None

    def landed_before(self, index: int) -> int:
        return sum(1 for e in self.trace[:index] if _landed(e))

    @property
    def checkpoints(self) -> int:
        return self.landed_before(len(self.trace))

    @property
    def turns(self) -> list[int]:
        return sorted({g.number for e in self.trace if (g := _is(e, "model")) and g.number})

    def _run_at(self, index: int) -> tuple[int, int]:
        """(0-based run in flight at trace position `index`, checkpoints when it started)."""
        run, started = 0, 0
        for n, e in enumerate(self.trace[:index]):
            gate = _is(e, "run")
            if gate is not None and gate.number is not None:
                run, started = gate.number - 1, self.landed_before(n)
        return run, started

    def _messages_batches(self) -> list[list[tuple[str, str]]]:
        batches: list[list[tuple[str, str]]] = []
        for run in (self.session or {}).get("runs", {}).values():
            for m in run["messages"]:
                if m["role"] == "assistant" and m["tool_calls"]:
                    batches.append(
                        [(c["name"], canonical_arguments(c["arguments"])) for c in m["tool_calls"]]
                    )
        return batches

    def _batches(self) -> list[Batch]:
        # A segment: the tool calls that started after one model request, before the next.
        segments: list[tuple[int, list[str], int]] = []
        for n, e in enumerate(self.trace):
            model = _is(e, "model")
            if model is not None and model.number is not None:
                segments.append((model.number, [], -1))
            elif _is(e, "tool", "started") and segments:
                turn, started, first = segments[-1]
                segments[-1] = (turn, [*started, e], n if first < 0 else first)
        segments = [s for s in segments if s[1]]
        seen: Counter[tuple[str, str]] = Counter()
        batches: list[Batch] = []
        for number, (calls, (turn, started, first)) in enumerate(
            zip(self._messages_batches(), segments, strict=False), start=1
        ):
            free = list(started)
            planned: list[Call] = []
            for tool, args in calls:
                base = gates.tool_gate(tool, args, "started")
                match = next((s for s in free if gates.base_name(s) == base), None)
                if match is None:
                    continue  # not executed (a rejected confirmation): no gate to arm
                free.remove(match)
                seen[(tool, args)] += 1
                planned.append(
                    Call(
                        tool=tool,
                        arguments=args,
                        started=match,
                        finished=gates.tool_gate(tool, args, "finished")
                        + match[len(base) :],  # the same occurrence suffix
                        occurrence=seen[(tool, args)],
                    )
                )
            batches.append(Batch(number=number, turn=turn, calls=tuple(planned), first_index=first))
        return batches

    # -- points -------------------------------------------------------------------------

    def points(self, kinds: tuple[str, ...]) -> list[CrashPoint]:
        n = self.checkpoints
        out: list[CrashPoint] = []
        for kind in kinds:
            if kind == "after-checkpoint":
                out += [CrashPoint(kind, k) for k in range(1, n)]
            elif kind in ("sigstop", "double-resume"):
                out += [
                    CrashPoint(kind, k)
                    for k in range(1, n)
                    if not self._between_runs(self._index(gates.checkpoint_gate(k, "landed")))
                ]
            elif kind in ("mid-commit", "lock-held"):
                out += [CrashPoint(kind, k) for k in range(1, n + 1)]
            elif kind in ("mid-model", "model-500", "model-timeout"):
                out += [CrashPoint(kind, t) for t in self.turns]
            elif kind == "mid-batch":
                out += [
                    CrashPoint(kind, b.number, i) for b in self.batches for i in range(len(b.calls))
                ]
        return sorted(out, key=CrashPoint.sort_key)

    def _between_runs(self, index: int) -> bool:
        """Whether trace position `index` falls after a run returned and before the next
        began: nothing is in flight there, so there is nothing to take over or resume."""
        after = [e for e in self.trace[index + 1 :] if not _is(e, "checkpoint")]
        return not after or _is(after[0], "run") is not None

    def plan(self, point: CrashPoint) -> Plan:
        kind, k = point.kind, point.k
        if kind in ("after-checkpoint", "sigstop", "double-resume"):
            if not 1 <= k < self.checkpoints:
                raise PointError(
                    f"killpoint: {point} is not a boundary of this baseline; it has "
                    f"{self.checkpoints} checkpoints, boundaries 1..{self.checkpoints - 1}"
                )
            gate = gates.checkpoint_gate(k, "landed")
            run, started = self._run_at(self._index(gate))
            return Plan(point, (gate,), frozenset({gate}), k, run, started)
        if kind == "mid-commit":
            # The last commit of checkpoint k: a checkpoint split over several transactions
            # is caught between them (the store then holds part of it).
            committing = gates.checkpoint_gate(k, "committing")
            commits = [e for e in self.trace if gates.base_name(e) == committing]
            gate = commits[-1] if commits else committing
            run, started = self._run_at(self._index(gate))
            return Plan(point, (gate,), frozenset({gate}), k - 1, run, started)
        if kind == "lock-held":
            gate = gates.checkpoint_gate(k, "writing")
            run, started = self._run_at(self._index(gate))
            return Plan(point, (gate,), frozenset({gate}), k - 1, run, started)
        if kind in ("mid-model", "model-500", "model-timeout"):
            gate = gates.model_gate(k)
            index = self._index(gate)
            run, started = self._run_at(index)
            arm = (gate,) if kind == "mid-model" else ()
            return Plan(point, arm, frozenset(arm), self.landed_before(index), run, started)
        if kind == "mid-batch":
            batch = next((b for b in self.batches if b.number == k), None)
            if batch is None or point.i is None or not 0 <= point.i < len(batch.calls):
                raise PointError(
                    f"killpoint: {point} is not in this baseline; its batches: "
                    + ", ".join(f"{b.number} ({len(b.calls)} calls)" for b in self.batches)
                )
            i = point.i
            arm = (batch.calls[i].finished, *(c.started for c in batch.calls[i + 1 :]))
            run, started = self._run_at(batch.first_index)
            # "tool" mode makes each finished call durable on its own.
            done = self.landed_before(batch.first_index) + (i if self.mode == "tool" else 0)
            return Plan(
                point, arm, frozenset(arm), done, run, started, finished_first=batch.calls[:i]
            )
        raise PointError(f"killpoint: no plan for crash point {point}")
