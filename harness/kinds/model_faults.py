"""Model faults: the model fails at turn K, the run ends ERROR, a fresh worker continues it.

model-500:K       the request for model turn K gets a 500
model-timeout:K   the request for model turn K times out
"""

from __future__ import annotations

from killpoint.judge.baseline import Baseline
from killpoint.kinds.base import CellContext, Plan
from killpoint.scenarios import Fault, gates
from killpoint.scenarios.faults import FaultKind
from killpoint.values.points import CrashPoint


class ModelFault:
    kills = False
    arity = 1
    groups: tuple[str, ...] = ("faults", "all")
    follows = False
    copyable = False
    kept = False
    cuts = False

    def __init__(self, name: str, fault: FaultKind) -> None:
        self.name = name
        self.fault = fault  # scenarios.Fault kind: "500" | "timeout"
        what = "gets a 500" if fault == "500" else "times out"
        self.meaning = f"the request for model turn K {what}; the run is then continued"
        self.label = f"model {fault}"

    def points(self, base: Baseline) -> list[CrashPoint]:
        return [CrashPoint(self.name, t) for t in base.turns]

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        index = base.position(gates.model_gate(point.k))
        run, started = base.run_at(index)
        return Plan(point, (), frozenset(), base.landed_before(index), run, started)

    def describe(self, point: CrashPoint) -> str:
        what = "gets a 500" if self.fault == "500" else "times out"
        return f"the request for model turn {point.k} {what}; a fresh worker continues the run"

    def run(self, cell: CellContext, plan: Plan) -> None:
        worker = cell.start("worker", faults=(Fault(turn=plan.point.k, kind=self.fault),))
        ended = cell.join(worker, "the worker meeting the model fault")
        cell.event(f"first worker ended: {ended}", "end", "worker")
        cell.after_crash(plan, [worker])

    def unavailable(self, store_kind: str) -> str | None:
        return None


__all__ = ["ModelFault"]
