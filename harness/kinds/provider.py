"""A provider that forgot: the model's stored responses are gone when the run continues.

  provider-forgot:K   killed after checkpoint K; the resumer's model provider has forgotten
                      every response it stored before the crash (expired, another region):
                      a runtime that chains turns by `previous_response_id` meets a 400 for
                      its first chained request and must resend what the model needs

Every other cell's provider remembers every response across processes, like a provider
within its retention window; this one is past it.
"""

from __future__ import annotations

from typing import Any

from killpoint.judge.baseline import Baseline
from killpoint.kinds.base import CellContext, Plan, after_checkpoint, boundaries_in_flight
from killpoint.values.findings import Finding
from killpoint.values.points import CrashPoint


class ProviderForgot:
    name = "provider-forgot"
    meaning = (
        "killed after checkpoint K; the model provider has forgotten every stored response "
        "when the run is continued: the runtime must resend what the model needs"
    )
    label = "provider forgot"
    kills = True
    arity = 1
    groups: tuple[str, ...] = ("faults", "all")
    follows = False
    copyable = True
    kept = False
    cuts = False

    def points(self, base: Baseline) -> list[CrashPoint]:
        """The first boundary with a run still in flight: one point per row (whichever
        boundary, the resumer's first request chains to a response the provider lost)."""
        return boundaries_in_flight(self.name, base)[:1]

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        return after_checkpoint(base, point)

    def describe(self, point: CrashPoint) -> str:
        return (
            f"killed after checkpoint {point.k}; the model provider has forgotten every "
            "stored response when the run is continued"
        )

    def run(self, cell: CellContext, plan: Plan) -> None:
        cell.after_crash(
            plan, cell.crash_at(plan), resume=lambda step, held: self.resume(cell, step, held)
        )

    def resume(self, cell: CellContext, step: dict[str, Any], held: int) -> None:
        cell.fault("the model provider forgets every response stored before the crash")
        resumer = cell.start("resumer", checkpoint_offset=held, forget_responses=True, **step)
        ended = cell.join(resumer, "the resumer")
        if not ended.startswith("done"):
            cell.end(Finding("unresumable", f"the resumed run failed: {ended}"))

    def unavailable(self, store_kind: str) -> str | None:
        return None


__all__ = ["ProviderForgot"]
