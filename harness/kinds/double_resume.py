"""Two resumers at once.

double-resume:K   killed after checkpoint K; two fresh workers are released together to
                  continue the run: exactly one may drive it; the other is refused, or
                  waits for the owner and returns its result
"""

from __future__ import annotations

from typing import Any

from killpoint.judge.baseline import Baseline
from killpoint.kinds.base import CellContext, Plan, after_checkpoint, boundaries_in_flight
from killpoint.kinds.ownership import BOTH, at_once, did, drove
from killpoint.values.findings import Finding
from killpoint.values.points import CrashPoint


class DoubleResume:
    name = "double-resume"
    meaning = "killed after checkpoint K; two resumers start at once: exactly one may drive the run"
    label = "double resume"
    kills = True  # the first worker is killed; then the fault is the second resumer
    arity = 1
    groups: tuple[str, ...] = ("faults", "all")
    follows = False
    copyable = True
    kept = False
    cuts = False

    def points(self, base: Baseline) -> list[CrashPoint]:
        return boundaries_in_flight(self.name, base)

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        return after_checkpoint(base, point)

    def describe(self, point: CrashPoint) -> str:
        return (
            f"killed after checkpoint {point.k}; two resumers are released at once: exactly "
            "one may drive the run"
        )

    def run(self, cell: CellContext, plan: Plan) -> None:
        cell.after_crash(
            plan, cell.crash_at(plan), resume=lambda step, held: self.race(cell, step, held)
        )

    def race(self, cell: CellContext, step: dict[str, Any], held: int) -> None:
        """Two resumers, parked where each takes the run up, released together."""
        gate = cell.resume_gate(step)
        a = cell.start("resumer-a", gates=(gate,), release=True, checkpoint_offset=held, **step)
        b = cell.start("resumer-b", gates=(gate,), release=True, checkpoint_offset=held, **step)
        for w in (a, b):
            out = w.wait(frozenset({gate}), cell.deadline())
            if out.kind != "gates":
                cell.end(Finding("missed", f"{w.spec.log_name} never began: {out.detail}"))
        # Released together: both race for the run from here.
        a.release(gate)
        b.release(gate)
        outs = [w.join(cell.deadline()) for w in (a, b)]
        cell.sides = BOTH  # compared once this returns
        if any(o.kind == "timeout" for o in outs):
            cell.end(Finding("hung", "a resumer passed its time limit"))
        # Who drove is what each did after the release (its tool calls in the ledger, its
        # requests to the model), never what it returned: a resumer that waits for the
        # owner and returns its result drove nothing. Two drove only if they drove the
        # same stretch at once (`at_once`): one may take up a run the other left PAUSED.
        did_each = [(w, *drove(cell, w)) for w in (a, b)]
        drivers = [(w, tools, turns) for w, tools, turns in did_each if tools or turns]
        both = "; ".join(f"{w.spec.log_name} {did(t, m)}" for w, t, m in drivers)
        why = at_once(cell, a, b) if len(drivers) == 2 else None
        if why is not None:
            cell.add(
                Finding(
                    "two-drivers",
                    f"both resumers drove the run: {both} ({why})",
                    path="runs",
                    evidence=tuple(
                        f"{w.spec.log_name}: pid {w.pid}, ended {o.kind}"
                        for w, o in zip((a, b), outs, strict=True)
                    ),
                )
            )
        elif len(drivers) == 2:
            cell.fault(f"one resumer after the other, never at once: {both}")
        elif not any(o.kind == "done" for o in outs):
            cell.end(
                Finding(
                    "unresumable",
                    "neither resumer drove the run: " + " | ".join(o.detail for o in outs),
                )
            )
        else:
            for (w, tools, turns), o in zip(did_each, outs, strict=True):
                if not tools and not turns:
                    cell.fault(
                        f"{w.spec.log_name} drove nothing ({o.kind}"
                        + (f": {o.detail}" if o.detail else "")
                        + ")"
                    )

    def unavailable(self, store_kind: str) -> str | None:
        return None


__all__ = ["DoubleResume"]
