"""A terminal status stored before the run's end (`terminal-early`).

A run may be COMPLETED or CANCELLED in the store only once it is over: neither is
continuable, so a crash while the store says so loses whatever the run had still to do,
and nothing resumes it. The store at each crash is held to that.

The yardstick is the uninterrupted run, but not its stored status: it is the runtime's own
run and shares the defect (a store that writes every mid-run checkpoint COMPLETED does so
in the baseline too). What the baseline shows whatever its store says is what the run did
after the same point: the model turns the same run still asked for, and the checkpoints it
still wrote. A run terminal in the store at a point where the uninterrupted run went on to
do both was not over there. A run that ended before the point passes; so does one
terminal after its last model turn (its last writes still landing after its status) or
once its last write has landed (a cancel written as it is requested lands before the
trace marks the model turn that asked for it). Where the baseline cannot place the point
(a mode whose writes lag: where a count of checkpoints lands is one run's race), nothing
is judged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from killpoint.errors import PointError
from killpoint.judge.baseline import Baseline
from killpoint.judge.contract import TERMINAL
from killpoint.scenarios import gates
from killpoint.values.findings import Finding
from killpoint.values.sentences import count, numbers

SIDES = ("model turns the uninterrupted run asked after that point", "status in the store")


def run_span(base: Baseline, run: int) -> tuple[int, int] | None:
    """Where run `run` (0-based) of the baseline's trace begins and where the next begins
    (the trace's end for the last); None when the trace never started it."""
    starts: dict[int, int] = {}
    for n, event in enumerate(base.trace):
        gate = gates.parse(event)
        if gate and gate.kind == "run" and gate.phase == "start" and gate.number is not None:
            starts.setdefault(gate.number, n)
    if run + 1 not in starts:
        return None
    later = [n for number, n in starts.items() if number > run + 1]
    return starts[run + 1], min(later, default=len(base.trace))


def turns_after(base: Baseline, held: int, span: tuple[int, int] | None) -> list[int]:
    """The model turns the run whose trace `span` covers (run_span) asked for once the
    store held `held` checkpoints of the session; none where the baseline cannot place
    that point (its writes lag, or it never held so many)."""
    if base.writes_lag or not 0 <= held <= base.checkpoints or span is None:
        return []
    begin, end = span
    try:
        at = base.position(gates.checkpoint_gate(held, "landed")) if held else 0
    except PointError:
        return []
    asked = {
        gate.number
        for event in base.trace[max(at, begin) : end]
        if (gate := gates.parse(event)) and gate.kind == "model" and gate.number is not None
    }
    return sorted(asked)


def ended_at(base: Baseline, span: tuple[int, int] | None) -> int:
    """The session's checkpoints landed when the run of the baseline `span` covers was over
    (the next run began, or the trace ended)."""
    return base.landed_before(span[1] if span else len(base.trace))


def _after(held: int) -> str:
    return f"after checkpoint {held}" if held else "before any checkpoint"


def terminal_early(
    base: Baseline,
    session: Mapping[str, Any] | None,
    held: int,
    point: str,
    cancel_turn: int | None = None,
) -> list[Finding]:
    """Each run `session` (the store at `point`, holding `held` checkpoints) holds as
    COMPLETED or CANCELLED while the same run of the uninterrupted run was not over there:
    it still asked the model, and wrote more checkpoints. A run is matched to the
    baseline's by its id, else by its place. `cancel_turn`: the model turn whose request
    makes the scenario cancel the run."""
    order = list((base.session or {}).get("runs", {}))
    found: list[Finding] = []
    for n, (run_id, run) in enumerate((session or {}).get("runs", {}).items()):
        status = run.get("status")
        if status not in TERMINAL:
            continue
        index = order.index(run_id) if run_id in order else n
        span = run_span(base, index)  # the trace parsed once for both questions
        later = turns_after(base, held, span)
        if status == "CANCELLED":
            # The cancel is requested as that turn's request arrives, before its gate is
            # traced: a runtime that writes CANCELLED at once lands it ahead of the gate.
            later = [t for t in later if t != cancel_turn]
        end = ended_at(base, span)
        # Both, or the run was over there: its last model turn asked before the point (its
        # last writes may still land after its status), or its last write landed.
        if not later or held >= end:
            continue
        found.append(
            Finding.of(
                "terminal-early",
                {
                    "run": index + 1,
                    "run_id": run_id,
                    "status": status,
                    "point": point,
                    "held": held,
                    "turns": later,
                    "ended_at": end,
                },
                path=f"runs[{index}].status",
                expected_value=later,
                actual_value=status,
                sides=SIDES,
                evidence=(
                    f"store at {point}: run {index + 1} {status}, "
                    f"{count(held, 'checkpoint')} of the session landed",
                    f"uninterrupted run: {_after(held)}, run {index + 1} asked for "
                    f"model {numbers('turn', later)}; it was over at checkpoint {end}",
                ),
            )
        )
    return found


__all__ = ["ended_at", "run_span", "terminal_early", "turns_after"]
