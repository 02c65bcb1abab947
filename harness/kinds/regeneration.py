"""A kill, then a model that does not repeat itself: the resumed run's re-asked turn is
answered otherwise (scenarios.behaviours).

  regenerate-ids:K   tool batch K has run (every call's effect done, the last call's result
                     not back) and the worker is killed; asked that turn again, the model
                     re-issues the same calls under fresh call ids and a fresh response id
  reorder:K          ... re-issues the same calls in another order (batches of 2 calls or more)
  respell:K          ... re-issues them with their argument text re-serialised
  replan:K           ... re-plans them as the scenario declares (the same intent, reworded)

The kill is the one `mid-batch:K:I` makes at the batch's last call: the effects happened, the
turn's reply may not be durable, so a runtime that asks the model again for it meets the
behaviour. (The kind is named for its behaviour alone: `+` joins the points of a schedule.)
A runtime that keeps the turn's reply, or keys its effects by what they do rather than by
the model's call id, runs nothing twice; one that keys them by call id runs the re-issued
call again, and `effect-reissued` names both call ids.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

from killpoint.errors import PointError
from killpoint.judge.baseline import Baseline, Batch
from killpoint.kinds.base import CellContext, Plan
from killpoint.kinds.kills import MidBatch
from killpoint.scenarios.ledger import Entry
from killpoint.values.durations import offset
from killpoint.values.findings import Finding
from killpoint.values.points import CrashPoint
from killpoint.values.scenario_refs import resolve_scenario

_WHAT = {
    "regenerate-ids": "re-issues the same calls under fresh call ids",
    "reorder": "re-issues the same calls in another order",
    "respell": "re-issues the same calls with their arguments spelled otherwise",
    "replan": "re-plans the calls as the scenario declares (the same intent, reworded)",
}
_LABELS = {
    "regenerate-ids": "new call ids",
    "reorder": "calls reordered",
    "respell": "arguments respelled",
    "replan": "replanned",
}


class Regeneration:
    kills = True
    arity = 1
    groups: tuple[str, ...] = ("faults", "all")
    follows = False
    copyable = True
    kept = False
    cuts = False

    def __init__(self, behaviour: str) -> None:
        self.name = behaviour
        self.behaviour = behaviour
        self.meaning = (
            f"tool batch K ran, its last result not back; killed; asked that turn again, "
            f"the model {_WHAT[behaviour]}"
        )
        self.label = _LABELS[behaviour]

    def points(self, base: Baseline) -> list[CrashPoint]:
        """The batches the behaviour changes whose run has a checkpoint to resume from (a
        run lost whole is not resumed: nobody asks again): regenerate-ids at every one,
        the others at the first (one point per row: a second asks the runtime the same)."""
        found = [
            point
            for b in base.batches
            if b.calls
            and self._changes(base, b)
            and not self.plan(base, point := CrashPoint(self.name, b.number)).expects_loss
        ]
        return found if self.behaviour == "regenerate-ids" else found[:1]

    def _changes(self, base: Baseline, batch: Batch) -> bool:
        if self.behaviour == "reorder":
            return len(batch.calls) >= 2
        if self.behaviour == "respell":
            return any(json.loads(c.arguments) for c in batch.calls)
        if self.behaviour == "replan":
            replan = resolve_scenario(base.scenario).replan
            return any(c.tool in replan for c in batch.calls)
        return True

    def plan(self, base: Baseline, point: CrashPoint) -> Plan:
        batch = next((b for b in base.batches if b.number == point.k), None)
        if batch is None or not batch.calls:
            raise PointError(
                f"killpoint: {point} is not a tool batch of this baseline; its batches: "
                + (", ".join(str(b.number) for b in base.batches) or "none")
            )
        last = CrashPoint("mid-batch", point.k, len(batch.calls) - 1)
        return _with_point(MidBatch().plan(base, last), point)

    def describe(self, point: CrashPoint) -> str:
        return (
            f"tool batch {point.k} ran (its last result not back); the worker is killed; "
            f"asked that turn again, the model {_WHAT[self.behaviour]}"
        )

    def run(self, cell: CellContext, plan: Plan) -> None:
        # The crashed worker's model needs no behaviour: a behaviour answers only a turn
        # served before to another process, which no first pass asks. So the kill leaves
        # what mid-batch:K at the batch's last call leaves, and a row's traced copy of that
        # state stands for it (killpoint.engine.row_trace).
        crashed = cell.crash_at(plan)
        cell.after_crash(plan, crashed, resume=lambda step, held: self.resume(cell, step, held))
        for finding in reissued(cell.ledger(), cell.regenerated(), cell.base.effects, cell.wall0):
            cell.add(finding)

    def resume(self, cell: CellContext, step: dict[str, Any], held: int) -> None:
        cell.fault(f"a turn asked again is answered otherwise: the model {_WHAT[self.behaviour]}")
        resumer = cell.start(
            "resumer", checkpoint_offset=held, model_behaviour=self.behaviour, **step
        )
        ended = cell.join(resumer, "the resumer")
        if not ended.startswith("done"):
            cell.end(Finding("unresumable", f"the resumed run failed: {ended}"))

    def unavailable(self, store_kind: str) -> str | None:
        return None


def _with_point(plan: Plan, point: CrashPoint) -> Plan:
    return replace(plan, point=point)


def reissued(
    entries: list[Entry], regenerated: list[dict[str, Any]], baseline: Any, zero: float
) -> list[Finding]:
    """An effect done again because the model re-issued its call: a call of a re-asked
    turn whose effect (its intent) the ledger holds more often than the baseline, under
    more idempotency keys than one. A tool without keys may repeat a call in flight once
    (the bound, counted elsewhere); a key exists to make the re-issue a no-op."""
    started = [e for e in entries if e.phase == "started" and e.effect]
    found: list[Finding] = []
    seen: set[tuple[str, str]] = set()
    for turn in regenerated:
        for call in turn.get("calls", ()):
            mine = [e for e in started if e.signature == (call["name"], call["arguments"])]
            if not mine:
                continue
            effect = mine[-1].effect_signature
            same = [e for e in started if e.effect_signature == effect]
            keys = {e.key for e in same if e.key is not None}
            if effect in seen or len(same) <= max(1, baseline.get(effect, 0)) or len(keys) < 2:
                continue
            seen.add(effect)
            before, after = _sides(str(turn.get("behaviour")), call)
            found.append(
                Finding.of(
                    "effect-reissued",
                    {
                        "call": f"{effect[0]}({effect[1]})",
                        "n": len(same),
                        "behaviour": turn.get("behaviour"),
                        "before": before,
                        "after": after,
                    },
                    path="ledger",
                    tool=effect[0],
                    expected_value=1,
                    actual_value=len(same),
                    evidence=tuple(_line(e, zero) for e in same[:2]),
                    sides=("effects the intent allows", "effects in the ledger"),
                )
            )
    return found


def _sides(behaviour: str, call: dict[str, Any]) -> tuple[str, str]:
    if behaviour == "reorder":
        return f"call {call.get('first_position')}", f"call {call.get('position')}"
    if behaviour in ("respell", "replan"):
        return _clip(call.get("first_text")), _clip(call.get("text"))
    return str(call.get("first_call_id")), str(call.get("call_id"))


def _clip(text: Any, limit: int = 120) -> str:
    shown = str(text)
    return shown if len(shown) <= limit else shown[: limit - 3] + "..."


def _line(e: Entry, zero: float) -> str:
    """A ledger line on the cell's clock (`zero`: its start on the wall clock)."""
    key = f", key {e.key}" if e.key else ""
    return f"{e.tool}({e.arguments}) started by pid {e.pid} at {offset(e.at - zero)}{key}"


__all__ = ["Regeneration", "reissued"]
