"""agno's run rows in the normal form, and the invariants a run row must keep."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from killpoint.values.findings import Finding

# What the comparison leaves out, and why. Ids are fresh per run or derived from
# response ids; times and durations differ by construction.
EXCLUDED = (
    # ids
    "run_id",
    "session_id",
    "id",  # message ids (uuid4)
    "tool_call_id",
    "call_id",
    "response_id",  # provider_data / model_provider_data: the scripted model's reply id
    "approval_id",
    # timestamps
    "created_at",
    "updated_at",
    "checkpoint_created_at",
    "start_time",
    "end_time",
    # durations
    "duration",
    "time_to_first_token",
    "timer",
)

_STATUSES = ("PENDING", "RUNNING", "PAUSED", "COMPLETED", "ERROR", "CANCELLED", "REGENERATED")


def loads_json(value: Any) -> Any:
    if isinstance(value, (str, bytes)):
        return json.loads(value)
    return value


def strip(value: Any) -> Any:
    """`value` without the EXCLUDED keys (at any depth) and without empty values, which
    agno writes or omits interchangeably (None, {}, [] are all "nothing")."""
    if isinstance(value, dict):
        out = {}
        for k, v in value.items():
            if k in EXCLUDED:
                continue
            v = strip(v)
            if v is None or v == {} or v == []:
                continue
            out[k] = v
        return out
    if isinstance(value, list):
        return [strip(v) for v in value]
    return value


def _arguments(raw: Any) -> str:
    return raw if isinstance(raw, str) else json.dumps(raw, sort_keys=True)


def _calls(message: Mapping[str, Any]) -> list[dict[str, Any]]:
    return [
        {
            "name": (c.get("function") or {}).get("name"),
            "arguments": _arguments((c.get("function") or {}).get("arguments") or "{}"),
        }
        for c in message.get("tool_calls") or []
    ]


def _call_positions(messages: Sequence[Mapping[str, Any]]) -> dict[str, tuple[int, int]]:
    """tool_call_id -> (1-based model turn, index in that turn's batch)."""
    positions: dict[str, tuple[int, int]] = {}
    turn = 0
    for m in messages:
        if m.get("role") != "assistant":
            continue
        turn += 1
        for i, c in enumerate(m.get("tool_calls") or []):
            for key in ("id", "call_id"):
                if c.get(key):
                    positions[c[key]] = (turn, i)
    return positions


def _pending(t: Mapping[str, Any]) -> bool:
    """A call waiting for the user's confirmation: not executed, no result."""
    return bool(t.get("requires_confirmation")) and t.get("confirmed") is None


def _tool_status(t: Mapping[str, Any]) -> str:
    if t.get("confirmed") is False:
        return "rejected"
    return "error" if t.get("tool_call_error") else "ok"


_MESSAGE_KEYS = ("role", "content", "tool_calls", "tool_name", "tool_call_error")
_TOOL_KEYS = ("tool_name", "tool_args", "result", "tool_call_error", "confirmed")
_RUN_KEYS = (
    "input",
    "status",
    "content",
    "metrics",
    "last_checkpoint_at_message_index",
    "requirements",
    "messages",
    "tools",
)


def normalise_run(row: Mapping[str, Any]) -> dict[str, Any]:
    """One agno run row in the reference adapter's form, then agno's other fields."""
    data = loads_json(row["run_data"])
    messages: list[dict[str, Any]] = list(data.get("messages") or [])
    tools: list[dict[str, Any]] = list(data.get("tools") or [])
    positions = _call_positions(messages)
    metrics = data.get("metrics") or {}
    usage = strip({k: v for k, v in metrics.items() if k != "details"})
    requirements = data.get("requirements") or []
    pending = [
        (r.get("tool_execution") or {}).get("tool_name", "?")
        for r in requirements
        if r.get("confirmation") is None
        and (r.get("tool_execution") or {}).get("requires_confirmation")
    ]
    out: dict[str, Any] = {
        "input": (data.get("input") or {}).get("input_content"),
        "status": row.get("status") or data.get("status"),
        "content": data.get("content"),
        "error": data.get("content") if (row.get("status") == "ERROR") else None,
        "usage": usage,
        "last_checkpoint_at_message_index": data.get("last_checkpoint_at_message_index"),
        "pending_confirmations": pending,
        "messages": [
            {
                "role": m.get("role"),
                "content": m.get("content"),
                "tool_calls": _calls(m),
                "name": m.get("tool_name"),
                "status": (
                    None
                    if m.get("role") != "tool"
                    else ("error" if m.get("tool_call_error") else "ok")
                ),
                **strip({k: v for k, v in m.items() if k not in _MESSAGE_KEYS}),
            }
            for m in messages
        ],
        "tool_executions": [
            {
                "name": t.get("tool_name"),
                "arguments": _arguments(t.get("tool_args") or {}),
                "result": t.get("result"),
                "status": _tool_status(t),
                "turn": positions.get(t.get("tool_call_id") or "", (None, None))[0],
                "call_index": positions.get(t.get("tool_call_id") or "", (None, None))[1],
                **strip({k: v for k, v in t.items() if k not in _TOOL_KEYS}),
            }
            for t in tools
            if not _pending(t)
        ],
        # agno keeps calls that wait for confirmation among its tool executions; they
        # have not run, so they are listed apart.
        "pending_tool_calls": [
            {"name": t.get("tool_name"), "arguments": _arguments(t.get("tool_args") or {})}
            for t in tools
            if _pending(t)
        ],
    }
    # Everything else agno persists about the run (metrics details, requirements, events...).
    out.update(strip({k: v for k, v in data.items() if k not in _RUN_KEYS and k not in out}))
    if metrics.get("details"):
        out["metrics_details"] = strip(metrics["details"])
    if requirements:
        out["requirements"] = strip(requirements)
    return out


def run_invariants(row: Mapping[str, Any]) -> list[str | Finding]:
    """What must hold of an agno run row at any moment, crash or not, by agno's own
    definitions: a RUNNING row is a checkpoint (`checkpoint_run` sets
    last_checkpoint_at_message_index to the number of messages it writes); no batch is
    half-written; every call with a result has a tool execution."""
    problems: list[str | Finding] = []
    data = loads_json(row["run_data"])
    status = row.get("status")
    if status not in _STATUSES:
        problems.append(f"unknown status {status!r}")
    if data.get("status") != status:
        problems.append(f"status column {status!r} but run_data says {data.get('status')!r}")
    messages = list(data.get("messages") or [])
    mark = data.get("last_checkpoint_at_message_index")
    if mark is not None and mark > len(messages):
        # agno counts the history it sent the model (add_history_to_context) and stores
        # the run without it; its own resume truncates to the mark and loses nothing, so
        # the stale mark is an inconsistency, not a broken store.
        problems.append(
            Finding(
                "inconsistency",
                f"last_checkpoint_at_message_index {mark} beyond {len(messages)} messages",
                path="last_checkpoint_at_message_index",
                expected_value=len(messages),
                actual_value=mark,
            )
        )
    elif status == "RUNNING" and mark != len(messages):
        problems.append(
            f"RUNNING with {len(messages)} messages but last_checkpoint_at_message_index is {mark}"
        )
    executed = {t.get("tool_call_id") for t in data.get("tools") or [] if not _pending(t)}
    waiting = {
        (r.get("tool_execution") or {}).get("tool_call_id")
        for r in data.get("requirements") or []
        if r.get("confirmation") is None
        and (r.get("tool_execution") or {}).get("requires_confirmation")
    }
    for n, m in enumerate(messages):
        if m.get("role") != "assistant" or not m.get("tool_calls"):
            continue
        ids = [c.get("id") for c in m["tool_calls"]]
        answers = [
            x.get("tool_call_id")
            for x in messages[n + 1 : n + 1 + len(ids)]
            if x.get("role") == "tool"
        ]
        if n + 1 == len(messages):
            # A trailing batch without results: a pause (agno may checkpoint it RUNNING
            # just before it writes PAUSED), every call of it waiting for confirmation.
            if status != "PAUSED" and not set(ids) <= waiting:
                problems.append(f"{status} run ends with a batch that has no results")
            continue
        if sorted(answers) != sorted(ids):
            problems.append(
                f"half-written batch at message {n}: calls {ids}, results for {answers}"
            )
        missing = [c for c in answers if c not in executed]
        if missing:
            calls, have = ("call", "has") if len(missing) == 1 else ("calls", "have")
            problems.append(f"{calls} {missing} at message {n} {have} no tool execution")
    return problems
