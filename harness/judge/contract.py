"""The contract: what must hold whatever the baseline did.

The baseline is the runtime's own uninterrupted run, so a defect it shares is invisible to
a comparison with it. These checks hold every run to the promise itself:
- what the runtime acknowledged (a status it returned) is durable;
- a terminal status, once durable, never changes;
- a cancel requested while step t is in flight stops the run at the boundary after it: no
  model turn after t is requested, by the worker or by any that resumes the run;
- a confirmation is applied or refused, never dropped;
- a session-state update a tool makes is applied exactly once (the scenario's invariant);
- a tool that takes an idempotency key never runs the same call again under a new key;
- the model calls a session's runs count are calls the model served.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from killpoint.scenarios import Scenario
from killpoint.scenarios.conversation import canonical_arguments
from killpoint.scenarios.ledger import Entry
from killpoint.values.findings import Finding, path_pattern
from killpoint.values.sentences import count

TERMINAL = ("COMPLETED", "CANCELLED")
ACKNOWLEDGED = ("status the runtime returned", "status in the store")


def acknowledged(
    acks: Iterable[Mapping[str, Any]], session: Mapping[str, Any] | None, who: str | None = None
) -> list[Finding]:
    """Every status a worker returned to its caller must be in the store. `who` names the
    worker where it is not the run's driver (the stale worker, woken after a takeover)."""
    runs = (session or {}).get("runs", {})
    found = []
    for ack in acks:
        run_id, status = ack["run_id"], ack["status"]
        stored = runs.get(run_id)
        named = {"who": who} if who else {}
        if stored is None:
            found.append(
                Finding.of(
                    "acknowledged-lost",
                    {"run_id": run_id, "status": status, "stored": None, **named},
                    path=f"runs[{run_id!r}]",
                    expected_value=status,
                    sides=ACKNOWLEDGED,
                )
            )
        elif status in TERMINAL and stored["status"] != status:
            # A stale worker's answer: the run is in the store, as the takeover left it;
            # what is not durable is the answer of a worker that no longer owned the run.
            found.append(
                Finding.of(
                    "stale-acknowledged" if who else "acknowledged-lost",
                    {"run_id": run_id, "status": status, "stored": stored["status"], **named},
                    path=f"runs[{run_id!r}].status",
                    expected_value=status,
                    actual_value=stored["status"],
                    sides=ACKNOWLEDGED,
                )
            )
    return found


def regressed(
    terminal: Mapping[str, str], session: Mapping[str, Any] | None, when: str
) -> dict[str, Finding]:
    """Runs that were durably COMPLETED or CANCELLED (`terminal`: run id -> status) and
    are not so in `session` any more, each with its finding."""
    after = (session or {}).get("runs", {})
    found = {}
    for run_id, status in terminal.items():
        now = after.get(run_id, {}).get("status")
        if now != status:
            found[run_id] = Finding.of(
                "status-regressed",
                {"run_id": run_id, "status": status, "when": when, "now": now},
                path=f"runs[{run_id!r}].status",
                expected_value=status,
                actual_value=now,
                sides=("status once durable", f"store {when}"),
            )
    return found


def cancel_honoured(
    scenario: Scenario, turns: Sequence[int], session: Mapping[str, Any] | None
) -> list[Finding]:
    """`turns`: the model turns requested over the whole cell, by every worker; `session`:
    the store at the end (None when the run was not followed to its end). A run that went
    on past the boundary and still ended CANCELLED cancelled late (`cancel-late`); one that
    ended otherwise ignored the cancel (`cancel-ignored`); without the end, what was seen
    is only that it went on, so it is called late, the weaker claim."""
    at = scenario.cancel_at_turn
    if at is None:
        return []
    beyond = sorted({t for t in turns if t > at})
    if not beyond:
        return []
    statuses = [r.get("status") for r in (session or {}).get("runs", {}).values()]
    ignored = session is not None and "CANCELLED" not in statuses
    return [
        Finding.of(
            "cancel-ignored" if ignored else "cancel-late",
            {
                "at": at,
                "beyond": beyond,
                "ended": [str(x) for x in statuses] if session is not None else None,
            },
            path="model",
            expected_value=at,
            actual_value=beyond,
            sides=("the turn the cancel came in", "model turns requested after it"),
        )
    ]


def model_calls(session: Mapping[str, Any] | None, served: int) -> list[Finding]:
    """The model calls the session's runs say they made (`usage.model_calls`, where the
    runtime keeps that count) are at most the replies the model served over the whole
    cell (`served`): a runtime that counts a call twice, in the baseline too, is caught
    here and nowhere else. A crash may only make the stored count smaller than what was
    served (a reply whose checkpoint never landed is asked again)."""
    counts = {
        run_id: n
        for run_id, run in (session or {}).get("runs", {}).items()
        if isinstance(run.get("usage"), Mapping)
        and isinstance(n := run["usage"].get("model_calls"), int)
        and not isinstance(n, bool)
    }
    stored = sum(counts.values())
    if stored <= served:
        return []
    return [
        Finding.of(
            "usage-overcounted",
            {"stored": stored, "served": served},
            path="runs[*].usage.model_calls",
            expected_value=served,
            actual_value=stored,
            sides=("replies the model served", "model calls the runs count"),
            evidence=tuple(f"run {r}: {count(n, 'model call')}" for r, n in counts.items()),
        )
    ]


def confirmations(
    scenario: Scenario, session: Mapping[str, Any] | None, entries: Sequence[Entry]
) -> list[Finding]:
    """In a finished run, every call of a tool that needs confirmation was applied (its
    effect is in the ledger and it was not answered as rejected) when the scenario
    confirms it, and had no effect when it refuses."""
    if not scenario.confirm or session is None:
        return []
    effects = {e.signature for e in entries if e.phase == "started" and e.effect}
    found = []
    for run_id, run in session["runs"].items():
        if run["status"] != "COMPLETED":
            continue
        executed = {(e["turn"], e["call_index"]): e for e in run["tool_executions"]}
        turn = 0
        for m in run["messages"]:
            if m["role"] != "assistant":
                continue
            turn += 1
            for index, call in enumerate(m["tool_calls"]):
                answer = scenario.confirm.get(call["name"])
                if answer is None:
                    continue
                signature = (call["name"], canonical_arguments(call["arguments"]))
                execution = executed.get((turn, index))
                rejected = execution is not None and execution.get("status") == "rejected"
                # Applied: its effect happened (the ledger). A missing execution record
                # alone is the store's bookkeeping (tool-executions-lost), not a drop.
                if answer and (rejected or signature not in effects):
                    found.append(
                        Finding.of(
                            "confirmation-dropped",
                            {
                                "run_id": run_id,
                                "tool": call["name"],
                                "turn": turn,
                                "how": "rejecting" if rejected else "without applying",
                            },
                            path=f"runs[{run_id!r}].tool_executions",
                            tool=call["name"],
                            expected_value="applied",
                            actual_value=[turn, index],
                        )
                    )
                elif not answer and signature in effects:
                    found.append(
                        Finding.of(
                            "confirmation-dropped",
                            {
                                "run_id": run_id,
                                "tool": call["name"],
                                "turn": turn,
                                "how": "refused",
                            },
                            path=f"runs[{run_id!r}].tool_executions",
                            tool=call["name"],
                            expected_value="refused",
                            actual_value=[turn, index],
                        )
                    )
    return found


def state_once(scenario: Scenario, session: Mapping[str, Any] | None) -> list[Finding]:
    """The scenario's own rule for its session state (e.g. a counter equals the number of
    counting calls the store holds)."""
    if scenario.state_invariant is None or session is None:
        return []
    return [
        Finding.of(
            "state-not-once",
            {"detail": problem},
            path="state",
            actual_value=session.get("state"),
            sides=("the scenario's rule", "session state in the store"),
        )
        for problem in scenario.state_invariant(session)
    ]


def idempotency(entries: Sequence[Entry], baseline: Mapping[tuple[str, str], int]) -> list[Finding]:
    """A call (tool, arguments) of a tool that was given idempotency keys must keep its key:
    more effective executions under distinct keys than the baseline made of that call
    repeat the effect the key exists to prevent, whatever the duplicate bound allows a
    tool without keys."""
    keys: dict[tuple[str, str], list[str]] = defaultdict(list)
    for e in entries:
        if e.phase == "started" and e.effect and e.key is not None:
            keys[e.effect_signature].append(e.key)
    found = []
    for (tool, arguments), seen in keys.items():
        distinct = list(dict.fromkeys(seen))
        if len(distinct) > max(1, baseline.get((tool, arguments), 0)):
            found.append(
                Finding.of(
                    "idempotency-key-changed",
                    {"call": f"{tool}({arguments})", "effects": len(seen), "keys": len(distinct)},
                    path="ledger",
                    tool=tool,
                    actual_value=distinct,
                    sides=("one key per call", "keys in the ledger"),
                )
            )
    return found


def without_crash(
    scenario: Scenario,
    session: Mapping[str, Any] | None,
    entries: Sequence[Entry],
    turns: Sequence[int],
    served: int | None = None,
) -> list[Finding]:
    """The checks an uninterrupted run is held to as well: what they find there is the
    row's finding ("happens without a crash"), whatever a crash does. (The idempotency
    check needs a baseline to count against; an acknowledged status that is not durable
    fails the baseline itself.) `served`: the replies the model served the run, when the
    stored count of model calls is to be held to it (a runtime that counts a call twice
    does so without a crash)."""
    return [
        *cancel_honoured(scenario, turns, session),
        *confirmations(scenario, session, entries),
        *state_once(scenario, session),
        *(model_calls(session, served) if served is not None else ()),
    ]


ROW_GROUP = "@no-crash"  # the suffix of a row-level finding's group key


def row_finding(finding: Finding) -> dict[str, Any]:
    """A finding of the baseline as the row's: its own group, apart from the cells'."""
    data = finding.to_json()
    data["group"] = finding.group_key + ROW_GROUP
    data["without_crash"] = True
    return data


def _fingerprint(data: Mapping[str, Any]) -> str:
    return json.dumps(
        [
            data.get("kind"),
            data.get("tool"),
            path_pattern(str(data.get("path", ""))),
            data.get("expected_value"),
            data.get("actual_value"),
        ],
        sort_keys=True,
        default=str,
    )


def added_by_crash(found: Iterable[Finding], row: Iterable[Mapping[str, Any]]) -> list[Finding]:
    """The contract findings of a cell that its row's baseline does not show as they are: a
    cell is charged only with what its crash changed (the same finding, with the same
    values, is the row's, reported once for it)."""
    row = list(row)
    shown = {_fingerprint(r) for r in row}
    return [
        f
        for f in found
        if _fingerprint(f.to_json()) not in shown and not any(_cut_short(f, r) for r in row)
    ]


def _cut_short(found: Finding, row: Mapping[str, Any]) -> bool:
    """A late cancel whose turns past the cancel are some of those the baseline asked for:
    a crash that cut the run short saw less of the row's late cancel, and added nothing.
    Likewise an overcount of model calls no larger than the baseline's: a crash changes
    both counts (a reply asked again is served again), not what the runtime adds."""
    if found.kind == "usage-overcounted" and row.get("kind") == "usage-overcounted":
        return _excess(found.actual_value, found.expected_value) <= _excess(
            row.get("actual_value"), row.get("expected_value")
        )
    if found.kind != "cancel-late" or row.get("kind") != "cancel-late":
        return False
    turns, shown = found.actual_value, row.get("actual_value")
    return (
        isinstance(turns, list)
        and isinstance(shown, list)
        and found.expected_value == row.get("expected_value")
        and set(turns) <= set(shown)
    )


def _excess(stored: Any, served: Any) -> float:
    if isinstance(stored, int) and isinstance(served, int):
        return stored - served
    return float("inf")  # not a count: never taken as the row's


__all__ = [
    "ROW_GROUP",
    "acknowledged",
    "added_by_crash",
    "cancel_honoured",
    "confirmations",
    "idempotency",
    "model_calls",
    "regressed",
    "row_finding",
    "state_once",
    "without_crash",
]
