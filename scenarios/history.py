"""The history of a run: one ordered file of what happened, written by every process that
takes part (the workers, and the power-loss filesystem's server where the store is on it).

Each event is one JSON line appended with a single O_APPEND write, like the ledger: the
file's order is the order in which the writes happened, across threads and processes, and
a SIGKILL cannot take a line back. An event says what its writer saw as it happened:

  run            a run begins in this process ("start"), is continued after a crash
                 ("resume"), or again after a pause or an error ("continue")
  ack            the runtime returned a status to its caller
  model-request  the scripted model got the request for a model turn
  model-reply    it answered (the calls asked for, the reply's usage)
  model-refused  it answered with an error (a scripted fault)
  effect         a tool's effect began (the ledger's "started" record)
  effect-done    the tool returned (the ledger's "finished" record)
  write          a durable write began (`what`: checkpoint, reply; the adapter's facts)
  committed      that write returned: it is in the store
  write-failed   it raised
  lease          a lease was stamped (`expires_at`, by the runtime's clock)
  claim          a claim of a run was decided (`granted`)
  settings       the store's durability settings, as the runtime's own connection reads them
  clock          this worker's wall clock was set off by `skew` seconds (clock-skew points)
  order          the order a tool batch's calls finished in (scenarios.finish_order)
  fs             a store-file operation the power-loss filesystem passed (`op`, `file`)

Every event carries the writer's pid, thread id and the true wall-clock time
(CLOCK_REALTIME, read directly: a worker whose `time.time` is set off still records the
true time). Nothing is recorded until `configure()` names the file.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .own_writes import own_write

HISTORY = "history.jsonl"  # the file's name in a cell's (or a baseline's) folder

_path: str | None = None


def configure(path: str | os.PathLike[str] | None) -> None:
    """Record this process's events into `path` (None: record nothing)."""
    global _path
    _path = None if path is None else os.fspath(path)


def recording() -> bool:
    return _path is not None


def true_time() -> float:
    """The wall clock, as the machine keeps it (not `time.time`, which a clock-skew point
    sets off in its worker)."""
    return time.clock_gettime(time.CLOCK_REALTIME)


def record(event: str, **fields: Any) -> None:
    """Append one event (a no-op until `configure`)."""
    path = _path
    if path is None:
        return
    line = json.dumps(
        {
            "event": event,
            "pid": os.getpid(),
            "tid": threading.get_native_id(),
            "at": true_time(),
            **fields,
        },
        ensure_ascii=True,
        default=str,
    )
    append(path, line)


def append(path: str | os.PathLike[str], line: str) -> None:
    """One line in one O_APPEND write (for writers that are not the configured process)."""
    with own_write("the history"):
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)


@dataclass(frozen=True)
class Event:
    """One event: its place in the history (`n`, from 0), kind, writer and fields."""

    n: int
    event: str
    pid: int
    at: float
    data: dict[str, Any] = field(default_factory=dict, compare=False)

    def get(self, key: str, default: Any = None) -> Any:
        return self.data.get(key, default)

    def to_json(self) -> dict[str, Any]:
        return {"n": self.n, **self.data}

    def describe(self) -> str:
        """The event in a few words, for a finding's witness."""
        d = self.data
        what = {
            "run": lambda: f"run {d.get('run_id')} {d.get('how')}",
            "ack": lambda: f"returned {d.get('status')} for run {d.get('run_id')}",
            "model-request": lambda: f"asked for model turn {d.get('turn')}",
            "model-reply": lambda: (
                f"model turn {d.get('turn')} answered"
                + (f" ({_calls(d.get('calls'))})" if d.get("calls") else "")
            ),
            "model-refused": lambda: f"model turn {d.get('turn')} refused ({d.get('status')})",
            "effect": lambda: f"effect of {d.get('tool')}({d.get('arguments')}) began",
            "effect-done": lambda: f"{d.get('tool')}({d.get('arguments')}) returned",
            "write": lambda: f"{_written(d)} began",
            "committed": lambda: f"{_written(d)} committed",
            "write-failed": lambda: f"{_written(d)} failed",
            "lease": lambda: (
                f"lease of run {d.get('run_id')} stamped to expire at "
                f"{_clock(d.get('expires_at'))} ({d.get('by')})"
            ),
            "claim": lambda: (
                f"claim of run {d.get('run_id')} "
                + ("granted" if d.get("granted") else f"refused ({d.get('why')})")
            ),
            "settings": lambda: (
                "store settings: " + ", ".join(f"{k}={v}" for k, v in d.items() if k not in _COMMON)
            ),
            "clock": lambda: f"wall clock set off by {d.get('skew')} s",
            "order": lambda: f"batch {d.get('batch')} finished in order {d.get('order')}",
            "fs": lambda: f"{d.get('op')} of {d.get('file')}",
        }.get(self.event)
        text = what() if what is not None else self.event
        return f"#{self.n} pid {self.pid}: {text}"


_COMMON = frozenset({"event", "pid", "tid", "at"})


def _calls(calls: Any) -> str:
    return ", ".join(f"{c[0]}({c[1]})" for c in calls or ())


def _written(d: dict[str, Any]) -> str:
    what = d.get("what", "write")
    if what == "checkpoint":
        status = f" ({d['status']})" if d.get("status") else ""
        return f"checkpoint {d.get('number')}{status}"
    if what == "reply":
        return f"the record of the reply ({_calls(d.get('calls'))})"
    return str(what)


def _clock(at: Any) -> str:
    return f"{at:.3f}" if isinstance(at, (int, float)) else str(at)


def read(path: str | os.PathLike[str]) -> list[Event]:
    """The history in `path`, in order; a line torn by a kill is left out."""
    try:
        text = Path(path).read_text()
    except FileNotFoundError:
        return []
    events: list[Event] = []
    for line in text.splitlines():
        data = _parse(line)
        if data is None:
            # A line torn by a kill mid-write has no newline, so the next writer's event is
            # appended to it: keep that event, drop only the torn fragment.
            start = line.rfind(_EVENT_START, 1)
            data = _parse(line[start:]) if start > 0 else None
        if data is None:
            continue
        events.append(
            Event(
                n=len(events),
                event=str(data["event"]),
                pid=int(data.get("pid", 0)),
                at=float(data.get("at", 0.0)),
                data=data,
            )
        )
    return events


_EVENT_START = '{"event": '  # every event begins so (record() puts it first)


def _parse(line: str) -> dict[str, Any] | None:
    try:
        data = json.loads(line)
    except ValueError:
        return None
    return data if isinstance(data, dict) and "event" in data else None


__all__ = ["HISTORY", "Event", "append", "configure", "read", "record", "recording", "true_time"]
