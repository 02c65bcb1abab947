"""A LangGraph thread in killpoint's normal form (killpoint.values.normal_form), and the
invariants its checkpoints must keep.

LangGraph keeps no run record: a thread is a tree of checkpoints, each the whole graph
state after a superstep, with the pending writes of the tasks of the next superstep that
finished before the next checkpoint landed. killpoint reads it as LangGraph does: the
head is the newest checkpoint, the thread's history the chain of parents from it. The
chain is cut into runs by the run id the driver keeps in each checkpoint's metadata
(agent.RUN_KEY); a run's messages are those its newest checkpoint added to the ones it
started with, then the messages of its finished tasks' pending writes (durable results
LangGraph will not compute again).

Status, which LangGraph does not store, is derived from a run's newest checkpoint:
  ERROR      a task of the next superstep failed (its pending write is an error) and
             none of its writes since are results;
  PAUSED     a task waits in `interrupt()` for an answer no resume write gives yet;
  COMPLETED  no task is pending and the last message is the model's answer (an
             assistant message without tool calls): the graph reached END;
  RUNNING    anything else (the run stopped between two supersteps, or inside one).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import Any

from killpoint.adapters.langgraph.agent import RUN_KEY
from killpoint.adapters.langgraph.reading import Node, Reader

ERROR, INTERRUPT, RESUME = "__error__", "__interrupt__", "__resume__"
SPECIAL = frozenset({ERROR, INTERRUPT, RESUME, "__scheduled__"})
ROLES = {"human": "user", "ai": "assistant", "tool": "tool", "system": "system"}


def arguments(args: Any) -> str:
    """A call's arguments as JSON text. langchain-core keeps them parsed; this is the text
    the scripted model sends for them (sorted keys, ASCII)."""
    return args if isinstance(args, str) else json.dumps(args, sort_keys=True, ensure_ascii=True)


def message(m: Any) -> dict[str, Any]:
    """A langchain-core message: its role and calls in the normal form, then every other
    field it holds, under langchain-core's names."""
    data = m.model_dump()
    out = {
        "role": ROLES.get(data.pop("type"), m.type),
        "content": data.pop("content"),
        "tool_calls": [
            {"name": c["name"], "arguments": arguments(c["args"])}
            for c in data.pop("tool_calls", None) or ()
        ],
    }
    out.update(data)
    return out


class Pending:
    """The pending writes of one checkpoint, per task."""

    def __init__(self, writes: Iterable[tuple[str, str, Any]]) -> None:
        self.results: dict[str, list[tuple[str, Any]]] = {}
        self.errors: dict[str, Any] = {}
        self.interrupts: list[Any] = []
        self.answered: set[str] = set()
        single_answer = False
        for task, channel, value in writes:
            if channel == ERROR:
                self.errors[task] = value
            elif channel == INTERRUPT:
                self.interrupts.extend(value if isinstance(value, (list, tuple)) else [value])
            elif channel == RESUME:
                if isinstance(value, dict):
                    self.answered.update(map(str, value))
                else:
                    single_answer = True
            elif channel not in SPECIAL:
                self.results.setdefault(task, []).append((channel, value))
        # A task that failed and then wrote results was retried and succeeded.
        for task in self.results:
            self.errors.pop(task, None)
        if single_answer and self.interrupts:
            self.answered.add(str(self.interrupts[0].id))

    @property
    def waiting(self) -> list[Any]:
        """Interrupts no resume write answers."""
        return [i for i in self.interrupts if str(i.id) not in self.answered]

    def messages(self, calls: dict[str, int]) -> list[Any]:
        """Messages the finished tasks wrote, tool results in their calls' order."""
        found = [
            m
            for writes in self.results.values()
            for channel, value in writes
            if channel == "messages"
            for m in (value if isinstance(value, list) else [value])
        ]
        return sorted(found, key=lambda m: calls.get(getattr(m, "tool_call_id", None) or "", -1))


def chain(nodes: Sequence[Node]) -> tuple[list[Node], list[str]]:
    """The head's history, oldest first, and the problems met walking it."""
    by_id = {n.checkpoint_id: n for n in nodes}
    out: list[Node] = []
    problems: list[str] = []
    node: Node | None = nodes[-1]
    while node is not None:
        out.append(node)
        if node.parent_id is not None and node.parent_id not in by_id:
            problems.append(
                f"checkpoint {node.checkpoint_id}'s parent {node.parent_id} is not in the store"
            )
        node = by_id.get(node.parent_id) if node.parent_id else None
    out.reverse()
    return out, problems


def runs_of(history: Sequence[Node]) -> list[tuple[str, list[Node]]]:
    """The history cut into runs by the run id in each checkpoint's metadata."""
    runs: list[tuple[str, list[Node]]] = []
    for node in history:
        run_id = str(node.metadata.get(RUN_KEY, "?"))
        if runs and runs[-1][0] == run_id:
            runs[-1][1].append(node)
        else:
            runs.append((run_id, [node]))
    return runs


def forks(nodes: Sequence[Node]) -> int:
    """Checkpoints beyond the first child of a parent: branches of the tree. An
    uninterrupted or resumed run writes none; a second writer of the thread does."""
    children: dict[str | None, int] = {}
    for n in nodes:
        children[n.parent_id] = children.get(n.parent_id, 0) + 1
    return sum(c - 1 for p, c in children.items() if p is not None and c > 1)


def run(checkpoint: Any, before: int) -> tuple[dict[str, Any], int]:
    """One run from its newest checkpoint (`before`: messages the thread held when it
    began); also the number of messages that checkpoint holds."""
    stored = list(checkpoint.checkpoint["channel_values"].get("messages") or [])
    pending = Pending(checkpoint.pending_writes or ())
    own = stored[before:]
    calls = {c["id"]: i for m in own if m.type == "ai" for i, c in enumerate(m.tool_calls)}
    messages = own + pending.messages(calls)
    status = _status(messages, pending)
    last = messages[-1] if messages else None
    final = last is not None and last.type == "ai" and not last.tool_calls
    normal = [message(m) for m in messages]
    return (
        {
            "input": next((m.text for m in messages if m.type == "human"), None),
            "status": status,
            "content": last.text if final and last is not None else None,
            "error": "; ".join(map(str, pending.errors.values())) or None,
            "usage": _usage(messages),
            "last_checkpoint_at_message_index": len(own),
            "pending_confirmations": [i.value.get("tool") for i in pending.waiting],
            "messages": normal,
            "tool_executions": _executions(messages),
        },
        len(stored),
    )


def _status(messages: Sequence[Any], pending: Pending) -> str:
    if pending.errors:
        return "ERROR"
    if pending.waiting:
        return "PAUSED"
    last = messages[-1] if messages else None
    if not pending.results and last is not None and last.type == "ai" and not last.tool_calls:
        return "COMPLETED"
    return "RUNNING"


def _usage(messages: Sequence[Any]) -> dict[str, int]:
    totals = {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0, "model_calls": 0}
    for m in messages:
        if m.type == "ai":
            totals["model_calls"] += 1
            for key in ("input_tokens", "output_tokens", "total_tokens"):
                totals[key] += int((m.usage_metadata or {}).get(key, 0))
    return totals


def _executions(messages: Sequence[Any]) -> list[dict[str, Any]]:
    """One per tool result, placed by the call it answers: (model turn of the run, index
    in that turn's batch)."""
    where: dict[str, tuple[int, int, Any]] = {}
    turn = 0
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.type == "ai":
            turn += 1
            for i, c in enumerate(m.tool_calls):
                where[c["id"]] = (turn, i, c)
        elif m.type == "tool" and m.tool_call_id in where:
            t, i, c = where[m.tool_call_id]
            out.append(
                {
                    "name": c["name"],
                    "arguments": arguments(c["args"]),
                    "turn": t,
                    "call_index": i,
                    "result": m.content,
                    "status": m.status,
                }
            )
    return out


def session(reader: Reader, thread_id: str) -> dict[str, Any] | None:
    """The thread in the normal form; None when it has no checkpoint."""
    nodes = reader.tree(thread_id)
    if not nodes:
        return None
    history, _ = chain(nodes)
    runs: dict[str, Any] = {}
    before = 0
    values: dict[str, Any] = {}
    for run_id, segment in runs_of(history):
        newest = reader.checkpoint(thread_id, segment[-1].checkpoint_id)
        runs[run_id], before = run(newest, before)
        values = newest.checkpoint["channel_values"]
    # The graph's state besides the messages (none for MessagesState), and the tree's forks.
    state = {
        "values": {
            k: v
            for k, v in values.items()
            if k != "messages" and not k.startswith(("__", "branch:"))
        },
        "forks": forks(nodes),
    }
    return {"state": state, "runs": runs}


def invariants(reader: Reader, thread_id: str) -> list[str]:
    """What must hold of a thread's checkpoints at any moment, crash or not."""
    problems: list[str] = []
    integrity = reader.integrity()
    if integrity:
        problems.append(f"SQLite integrity_check: {integrity}")
    nodes = reader.tree(thread_id)
    if not nodes:
        return problems
    history, broken = chain(nodes)
    problems.extend(broken)
    for node in history:
        if RUN_KEY not in node.metadata:
            problems.append(f"checkpoint {node.checkpoint_id} has no {RUN_KEY} in its metadata")
    for run_id, segment in runs_of(history):
        newest = reader.checkpoint(thread_id, segment[-1].checkpoint_id)
        stored = list(newest.checkpoint["channel_values"].get("messages") or [])
        problems.extend(f"run {run_id}: {p}" for p in batches(stored))
    return problems


def batches(messages: Sequence[Any]) -> list[str]:
    """Every batch of calls in a checkpoint's messages is answered whole, by results right
    after it, except the last one (its tool superstep has not been checkpointed yet)."""
    problems: list[str] = []
    for n, m in enumerate(messages):
        if m.type == "tool" and not any(
            c["id"] == m.tool_call_id for x in messages[:n] if x.type == "ai" for c in x.tool_calls
        ):
            problems.append(f"tool result at message {n} answers no earlier call")
        if m.type != "ai" or not m.tool_calls or n + 1 == len(messages):
            continue
        ids = [c["id"] for c in m.tool_calls]
        answers = [x.tool_call_id for x in messages[n + 1 : n + 1 + len(ids)] if x.type == "tool"]
        if sorted(answers) != sorted(ids):
            problems.append(
                f"half-written batch at message {n}: calls {ids}, results for {answers}"
            )
    return problems
