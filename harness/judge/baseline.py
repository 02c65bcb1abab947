"""The baseline: a scenario run without faults, and what its trace says.

A baseline worker runs with every gate traced (none armed), so its trace is the
ordered list of points the run passed: run starts, model turns, tool calls,
checkpoints writing, committing and landed. This module reads the trace (how many
checkpoints landed before a point, which run was in flight, the tool batches and
their calls); each crash-point kind (killpoint.kinds) plans its points from that.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from killpoint.errors import PointError
from killpoint.scenarios import gates
from killpoint.scenarios.conversation import canonical_arguments
from killpoint.scenarios.ledger import Entry
from killpoint.values.cell import Row


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
    """Effective executions per effect: (tool, intent) for a tool that declares what its
    effect is, else (tool, canonical arguments)."""
    return Counter(e.effect_signature for e in entries if e.phase == "started" and e.effect)


def durable_results(
    session: dict[str, Any] | None, entries: Sequence[Entry] = ()
) -> Counter[tuple[str, str]]:
    """Tool results the store holds, per effect as `effects` counts it (the ledger's
    `entries` say which intent each call's arguments have)."""
    found: Counter[tuple[str, str]] = Counter()
    for run in (session or {}).get("runs", {}).values():
        for e in run["tool_executions"]:
            found[(e["name"], canonical_arguments(e["arguments"]))] += 1
    return as_effects(found, entries)


def as_effects(
    calls: Counter[tuple[str, str]], entries: Sequence[Entry]
) -> Counter[tuple[str, str]]:
    """Calls (tool, canonical arguments) counted per effect, by the intents the ledger's
    `entries` recorded for those arguments (a call the ledger never saw stays itself)."""
    # From the `started` records: they carry the intent, a call's `finished` record none.
    intents = {e.signature: e.effect_signature for e in entries if e.intent is not None}
    found: Counter[tuple[str, str]] = Counter()
    for call, n in calls.items():
        found[intents.get(call, call)] += n
    return found


def message_batches(session: dict[str, Any] | None) -> list[list[tuple[str, str]]]:
    """The tool batches the session's messages hold, in order: each assistant turn's
    calls as (tool, canonical arguments)."""
    return [
        [(c["name"], canonical_arguments(c["arguments"])) for c in m["tool_calls"]]
        for run in (session or {}).get("runs", {}).values()
        for m in run["messages"]
        if m["role"] == "assistant" and m["tool_calls"]
    ]


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
    problem_kind: str = "missed"  # the finding it makes: "hung", "acknowledged-lost", "error"
    # What the problem's sentence was made from, when a check found it (Finding.facts):
    # the cell that carries the problem into a report says what its evidence says.
    problem_facts: dict[str, Any] | None = None
    nondeterministic: str | None = None  # two baselines differ: where
    seconds: float = 0.0
    per_call: bool = False  # the mode makes each tool result durable on its own
    writes_lag: bool = False  # the mode's writes land behind the run (Mode.writes_lag)
    # The second baseline run's trace: points are planned only where both traces offer
    # them, and `trace_note` says how many one trace offered alone.
    other_trace: list[str] = field(default_factory=list)
    trace_note: str | None = None
    batches: list[Batch] = field(default_factory=list)
    tables: tuple[str, ...] = ()  # the store's tables after the run (StoreBackend.tables)
    # What the contract checks found in the uninterrupted run (Finding.to_json(), with the
    # row's group key): findings of the row, "happens without a crash", never of a cell.
    findings: list[dict[str, Any]] = field(default_factory=list)
    # The store's file-system operations in this run and in the other (TracedOp.to_json(),
    # each with the checkpoint it belongs to), recorded when fs-op points are planned
    # (killpoint.kinds.fs_ops); `fs_budget`: how many of them per checkpoint (--fs-ops).
    fs_ops: list[dict[str, Any]] = field(default_factory=list)
    other_fs_ops: list[dict[str, Any]] = field(default_factory=list)
    fs_budget: str = "all"
    # The first run's history (scenarios.history: each event as its JSON), held to the
    # history's rules (killpoint.judge.history); what its findings name is in `findings`.
    history: list[dict[str, Any]] = field(default_factory=list)

    def batch_calls(self) -> tuple[tuple[tuple[str, str], ...], ...]:
        """Each tool batch's calls, (tool, canonical arguments), in call order."""
        return tuple(tuple((c.tool, c.arguments) for c in b.calls) for b in self.batches)

    def stamps_leases(self) -> bool:
        """Whether the runtime's adapter reported a lease in the run's history."""
        return any(e.get("event") == "lease" for e in self.history)

    # -- analysis -----------------------------------------------------------------------

    def analyse(self) -> None:
        self.batches = self._batches()

    def position(self, name: str) -> int:
        """Where the trace first passed gate `name`; PointError if it never did."""
        try:
            return self.trace.index(name)
        except ValueError:
            raise PointError(f"killpoint: the baseline never passed {name!r}") from None

    def passed(self, name: str) -> bool:
        return name in self.trace

    def landed_before(self, index: int) -> int:
        return sum(1 for e in self.trace[:index] if _landed(e))

    @property
    def row(self) -> Row:
        return (self.runtime, self.scenario, self.mode, self.store)

    @property
    def outage(self) -> bool:
        """A dependency of killpoint failed under it (not the runtime's doing)."""
        return self.problem_kind in ("store-unavailable", "disk-full", "resource-exhausted")

    @property
    def checkpoints(self) -> int:
        return self.landed_before(len(self.trace))

    @property
    def turns(self) -> list[int]:
        return sorted(
            {g.number for e in self.trace if (g := _is(e, "model", "received")) and g.number}
        )

    def run_at(self, index: int) -> tuple[int, int]:
        """(0-based run in flight at trace position `index`, checkpoints when it started)."""
        run, started = 0, 0
        for n, e in enumerate(self.trace[:index]):
            gate = _is(e, "run")
            if gate is not None and gate.number is not None:
                run, started = gate.number - 1, self.landed_before(n)
        return run, started

    def _batches(self) -> list[Batch]:
        # A segment: the tool calls that started after one model request, before the next.
        segments: list[tuple[int, list[str], int]] = []
        for n, e in enumerate(self.trace):
            model = _is(e, "model", "received")
            if model is not None and model.number is not None:
                segments.append((model.number, [], -1))
            elif _is(e, "tool", "started") and segments:
                turn, started, first = segments[-1]
                segments[-1] = (turn, [*started, e], n if first < 0 else first)
        segments = [s for s in segments if s[1]]
        seen: Counter[tuple[str, str]] = Counter()
        batches: list[Batch] = []
        for number, (calls, (turn, started, first)) in enumerate(
            zip(message_batches(self.session), segments, strict=False), start=1
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

    def batch_at(self, index: int) -> Batch | None:
        """The tool batch in flight at trace position `index`: its first call started
        before it and no model turn was answered since (None between batches)."""
        begun = [b for b in self.batches if 0 <= b.first_index < index]
        if not begun:
            return None
        batch = begun[-1]
        if any(_is(e, "model", "received") for e in self.trace[batch.first_index : index]):
            return None
        return batch

    def other(self) -> Baseline | None:
        """The same baseline as the second run's trace tells it (None without one)."""
        if not self.other_trace:
            return None
        # The operations swap sides: either run's points are those both runs agree on.
        other = replace(
            self,
            trace=self.other_trace,
            other_trace=[],
            batches=[],
            fs_ops=self.other_fs_ops,
            other_fs_ops=self.fs_ops,
        )
        other.analyse()
        return other

    def returned_at(self) -> set[int]:
        """Checkpoints landed when a run had returned: at the start of each later run and at
        the end. Every mode's run returns after its writes have landed, so these counts are
        the same in every run of the scenario, whatever order the writes land in."""
        counts = {self.checkpoints}
        for n, e in enumerate(self.trace):
            gate = _is(e, "run", "start")
            if gate is not None and gate.number is not None and gate.number > 1:
                counts.add(self.landed_before(n))
        return counts

    def in_flight_after(self, k: int) -> bool:
        """Whether a run is in flight once checkpoint k has landed (something to take over
        or resume). Read from where k lands in the trace; in a mode whose writes lag, from
        the store's count (the trace's order is one run's race)."""
        if self.writes_lag:
            return k not in self.returned_at()
        return not self.between_runs(self.position(gates.checkpoint_gate(k, "landed")))

    def between_runs(self, index: int) -> bool:
        """Whether trace position `index` falls after a run returned and before the next
        began: nothing is in flight there, so there is nothing to take over or resume."""
        after = [e for e in self.trace[index + 1 :] if not _is(e, "checkpoint")]
        return not after or _is(after[0], "run") is not None
