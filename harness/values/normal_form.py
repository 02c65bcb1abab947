"""The normal form: what `RuntimeAdapter.read_session` returns, the one shape the oracle
compares, whatever the runtime stores.

    {"state": <the session's state: any JSON value, None when the runtime keeps none>,
     "runs": {run_id: Run, ...}}          # in the order the runs were started

    Run = {
      "status": "PENDING" | "RUNNING" | "PAUSED" | "COMPLETED" | "ERROR" | "CANCELLED",
      "messages": [{"role": str, "tool_calls": [{"name": str, "arguments": str}], ...}],
      "tool_executions": [{"name": str, "arguments": str, "turn": int,
                           "call_index": int, ...}],
      "last_checkpoint_at_message_index": int | None,
      "failures": [{"kind": "error" | "abort", ...}],   # optional
      ...                                 # anything else the runtime persists
    }

- `arguments` is the call's JSON text, as the model sent it.
- `turn` is the 1-based model turn of the run that asked for the call, `call_index` its
  place in that turn's batch: with `name` and `arguments` they identify a tool execution.
- `last_checkpoint_at_message_index` is how many of `messages` the run's last
  checkpoint covers (None: the runtime keeps no such mark).
- `failures` (optional): the records of failed or aborted attempts that a runtime keeps
  in its history beside the conversation, in the order it wrote them: a model error it
  stored (ADK's error event for a provider's 500), the mark of an aborted invocation.
  They are not `messages`: the conversation is what the run said and did, and a resume
  sends the model no failure record (a run that retried a failed model turn holds the
  same conversation as one that never failed). Whether such a record is there depends
  on where a fault or a kill landed (a kill before the error record lands leaves none,
  and the resume just asks again), so the oracle compares `failures` apart, as history
  (`failures-differ`: shown, never the verdict); what a failure changed is judged where
  it shows: the status, the messages, the effects.
- Every other key (content, usage, errors, metrics, ...) is compared as it is, after the
  oracle drops the adapter's `excluded` keys (ids, timestamps: what differs between two
  runs by construction) at any depth. An adapter returns what its store holds and never
  strips those itself.

`validate_session` checks a value against this and names the first wrong field.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypedDict

from killpoint.errors import NormalFormError

STATUSES = ("PENDING", "RUNNING", "PAUSED", "COMPLETED", "ERROR", "CANCELLED")
# What a failure record is: a failed attempt (a model or tool error the runtime stored) or
# the mark of an abort (a cancel).
FAILURE_KINDS = ("error", "abort")


class ToolCall(TypedDict):
    name: str
    arguments: str


class Message(TypedDict, total=False):
    role: str  # required
    tool_calls: list[ToolCall]  # required (empty for a message without calls)
    content: Any


class ToolExecution(TypedDict, total=False):
    name: str  # required
    arguments: str  # required
    turn: int  # required
    call_index: int  # required
    result: Any
    status: str


class Failure(TypedDict, total=False):
    kind: str  # required: one of FAILURE_KINDS
    message: Any


class Run(TypedDict, total=False):
    status: str  # required
    messages: list[Message]  # required
    tool_executions: list[ToolExecution]  # required
    last_checkpoint_at_message_index: int | None  # required
    failures: list[Failure]
    usage: Any


class Session(TypedDict):
    state: Any
    runs: dict[str, Run]


def validate_session(value: Any, who: str = "read_session") -> None:
    """Raise NormalFormError naming the first field of `value` that breaks the form."""
    if value is None:
        return
    _need(isinstance(value, Mapping), who, "", "a dict with 'state' and 'runs'", value)
    for key in ("state", "runs"):
        _need(key in value, who, key, "present", "missing")
    runs = value["runs"]
    _need(isinstance(runs, Mapping), who, "runs", "a dict of run id -> run", runs)
    for run_id, run in runs.items():
        _run(run, who, f"runs[{run_id!r}]")


def _run(run: Any, who: str, at: str) -> None:
    _need(isinstance(run, Mapping), who, at, "a dict", run)
    for key in ("status", "messages", "tool_executions", "last_checkpoint_at_message_index"):
        _need(key in run, who, f"{at}.{key}", "present", "missing")
    _need(run["status"] in STATUSES, who, f"{at}.status", f"one of {', '.join(STATUSES)}",
          run["status"])  # fmt: skip
    mark = run["last_checkpoint_at_message_index"]
    _need(mark is None or _is_int(mark), who, f"{at}.last_checkpoint_at_message_index",
          "an int or None", mark)  # fmt: skip
    _need(isinstance(run["messages"], list), who, f"{at}.messages", "a list", run["messages"])
    for n, m in enumerate(run["messages"]):
        where = f"{at}.messages[{n}]"
        _need(isinstance(m, Mapping), who, where, "a dict", m)
        _need(isinstance(m.get("role"), str), who, f"{where}.role", "a str", m.get("role"))
        _need(isinstance(m.get("tool_calls"), list), who, f"{where}.tool_calls",
              "a list (empty when the message has no calls)", m.get("tool_calls"))  # fmt: skip
        for i, call in enumerate(m["tool_calls"]):
            _call(call, who, f"{where}.tool_calls[{i}]", ("name", "arguments"))
    executions = run["tool_executions"]
    _need(isinstance(executions, list), who, f"{at}.tool_executions", "a list", executions)
    for n, e in enumerate(executions):
        where = f"{at}.tool_executions[{n}]"
        _call(e, who, where, ("name", "arguments"))
        for key in ("turn", "call_index"):
            _need(_is_int(e.get(key)), who, f"{where}.{key}", "an int", e.get(key))
    failures = run.get("failures", [])
    _need(isinstance(failures, list), who, f"{at}.failures", "a list (when present)", failures)
    for n, f in enumerate(failures):
        where = f"{at}.failures[{n}]"
        _need(isinstance(f, Mapping), who, where, "a dict", f)
        _need(f.get("kind") in FAILURE_KINDS, who, f"{where}.kind",
              f"one of {', '.join(FAILURE_KINDS)}", f.get("kind"))  # fmt: skip


def _call(call: Any, who: str, at: str, keys: Iterable[str]) -> None:
    _need(isinstance(call, Mapping), who, at, "a dict", call)
    for key in keys:
        _need(isinstance(call.get(key), str), who, f"{at}.{key}", "a str", call.get(key))


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _need(ok: bool, who: str, at: str, expected: str, got: Any) -> None:
    if not ok:
        shown = got if got == "missing" else repr(got)
        if len(shown) > 120:
            shown = shown[:117] + "..."
        raise NormalFormError(
            f"killpoint: {who} returned a session whose {at or 'value'} should be {expected}, "
            f"got {shown} (the normal form is described in killpoint.values.normal_form)"
        )


def exclude(value: Any, keys: Iterable[str]) -> Any:
    """`value` without the dict entries named in `keys`, at any depth."""
    drop = frozenset(keys)
    if not drop:
        return value
    return _exclude(value, drop)


def _exclude(value: Any, drop: frozenset[str]) -> Any:
    if isinstance(value, Mapping):
        return {k: _exclude(v, drop) for k, v in value.items() if k not in drop}
    if isinstance(value, list):
        return [_exclude(v, drop) for v in value]
    return value


__all__ = [
    "FAILURE_KINDS",
    "STATUSES",
    "Failure",
    "Message",
    "NormalFormError",
    "Run",
    "Session",
    "ToolCall",
    "ToolExecution",
    "exclude",
    "validate_session",
]
