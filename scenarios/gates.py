"""Gates: named points where a worker stops and tells its parent, so a kill lands exactly there.

Names (built and parsed here, nowhere else):
  run:{i}:start                run i of the session begins (1-based)
  run:{i}:resume               run i is continued after a crash
  model:{turn}:received        the scripted model got the request for model turn `turn`
  model:{turn}:chunk:{n}       its streamed reply is about to send chunk n: n-1 are sent (the
                               first and last chunks are traced; the others pass only when
                               armed)
  tool:{name}:{sig}:started    a tool call began (sig = call_signature of its arguments)
  tool:{name}:{sig}:finished   a tool call returned, before its result goes back to the runtime
  checkpoint:{n}:writing       (adapters) the n-th checkpoint's durable write is about to begin
  checkpoint:{n}:committing    (adapters) inside its transaction, before COMMIT
  checkpoint:{n}:landed        (adapters) the n-th checkpoint of this process has committed

The second and later passes of one name in a process carry `#2`, `#3`, ... (a retried
model turn, the same call made twice).

A process arms gates with `arm()` (fds; or the KILLPOINT_GATES / KILLPOINT_GATE_FD
environment variables) or `configure()` (callables). When an armed gate is hit,
it is announced, then the hitting thread blocks: forever (the parent is about to
SIGKILL the process) or until the parent releases it. A tracer, if set, sees
every hit, armed or not. With nothing armed and no tracer, `hit()` is one set
lookup.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
import threading
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from .conversation import canonical_arguments

_lock = threading.Lock()
_armed: frozenset[str] = frozenset()
_announce: Callable[[str], None] | None = None
_wait: Callable[[str], None] | None = None  # None: block forever
_tracer: Callable[[str], None] | None = None
_hits: list[str] = []
_seen: dict[str, int] = {}
# The armed gates a thread is blocked at now and that no release has been sent for yet
# (holding()): a gate stops being held when its release arrives, not when its thread wakes.
_holding: set[str] = set()


def call_signature(arguments: str | dict[str, object]) -> str:
    return hashlib.sha256(canonical_arguments(arguments).encode()).hexdigest()[:12]


def tool_gate(name: str, arguments: str | dict[str, object], phase: str) -> str:
    return f"tool:{name}:{call_signature(arguments)}:{phase}"


def model_gate(turn: int) -> str:
    return f"model:{turn}:received"


def chunk_gate(turn: int, n: int) -> str:
    """`model:{turn}:chunk:{n}`: model turn `turn`'s streamed reply is about to send chunk
    n (n-1 chunks are sent)."""
    return f"model:{turn}:chunk:{n}"


CHECKPOINT_PHASES = ("writing", "committing", "landed")
RUN_PHASES = ("start", "resume")
TOOL_PHASES = ("started", "finished")


def checkpoint_gate(n: int, phase: str) -> str:
    """`checkpoint:{n}:{phase}`, phase one of CHECKPOINT_PHASES."""
    if phase not in CHECKPOINT_PHASES:
        raise ValueError(f"gates: checkpoint phase {phase!r}; choose from {CHECKPOINT_PHASES}")
    return f"checkpoint:{n}:{phase}"


def run_gate(index: int, phase: str) -> str:
    """`run:{index}:{phase}` (index 1-based), phase "start" or "resume"."""
    if phase not in RUN_PHASES:
        raise ValueError(f"gates: run phase {phase!r}; choose from {RUN_PHASES}")
    return f"run:{index}:{phase}"


@dataclass(frozen=True)
class Gate:
    """A gate name taken apart: `kind` is run, model, tool or checkpoint; `number` the
    run, turn or checkpoint (None for a tool); `tool` and `signature` a tool's;
    `occurrence` 1 for the first pass of the name in a process, 2 for `#2`, ...; `chunk`
    the chunk of a streamed reply (phase "chunk")"""

    kind: str
    phase: str
    number: int | None = None
    tool: str | None = None
    signature: str | None = None
    occurrence: int = 1
    chunk: int | None = None

    @property
    def base(self) -> str:
        """The name without its occurrence suffix."""
        if self.kind == "tool":
            return f"tool:{self.tool}:{self.signature}:{self.phase}"
        if self.chunk is not None:
            return f"{self.kind}:{self.number}:{self.phase}:{self.chunk}"
        return f"{self.kind}:{self.number}:{self.phase}"


_NUMBERED = re.compile(r"(run|model|checkpoint):(\d+):([a-z]+)(?:#(\d+))?")
_TOOL = re.compile(r"tool:(.+):([0-9a-f]{12}):(started|finished)(?:#(\d+))?")
_CHUNK = re.compile(r"model:(\d+):chunk:(\d+)(?:#(\d+))?")


@functools.lru_cache(maxsize=4096)
def parse(name: str) -> Gate | None:
    """The parts of a gate name; None for a name that is not one of the forms above.
    Cached: a baseline's planning asks about the same few hundred names again and again
    (a Gate is frozen)."""
    m = _NUMBERED.fullmatch(name)
    if m:
        kind, number, phase, occurrence = m.groups()
        phases = {"run": RUN_PHASES, "model": ("received",), "checkpoint": CHECKPOINT_PHASES}
        if phase not in phases[kind]:
            return None
        return Gate(kind, phase, number=int(number), occurrence=int(occurrence or 1))
    m = _CHUNK.fullmatch(name)
    if m:
        turn, chunk, occurrence = m.groups()
        return Gate(
            "model", "chunk", number=int(turn), chunk=int(chunk), occurrence=int(occurrence or 1)
        )
    m = _TOOL.fullmatch(name)
    if m:
        tool, signature, phase, occurrence = m.groups()
        return Gate("tool", phase, tool=tool, signature=signature, occurrence=int(occurrence or 1))
    return None


def base_name(name: str) -> str:
    """A gate name without its occurrence suffix (`#2`)."""
    return name.split("#", 1)[0]


def configure(
    names: Iterable[str],
    *,
    announce: Callable[[str], None] | None,
    wait: Callable[[str], None] | None = None,
    tracer: Callable[[str], None] | None = None,
) -> None:
    """Arm `names`: `announce(name)` on a hit, then `wait(name)` (None: block forever)."""
    global _armed, _announce, _wait, _tracer
    with _lock:
        _armed = frozenset(names)
        _announce, _wait, _tracer = announce, wait, tracer
        _hits.clear()
        _seen.clear()
        _holding.clear()


def arm(names: Iterable[str], announce_fd: int, release_fd: int | None = None) -> None:
    """Arm `names` over raw fds: a hit writes "name\\n" to `announce_fd`, then blocks
    until one byte arrives on `release_fd` (or forever without one)."""

    def announce(name: str) -> None:
        os.write(announce_fd, f"{name}\n".encode())

    def wait(_name: str) -> None:
        assert release_fd is not None
        os.read(release_fd, 1)

    configure(names, announce=announce, wait=wait if release_fd is not None else None)


def disarm() -> None:
    configure((), announce=None)


def arm_from_env() -> None:
    names = os.environ.get("KILLPOINT_GATES", "")
    fd = os.environ.get("KILLPOINT_GATE_FD")
    if names and fd:
        release = os.environ.get("KILLPOINT_GATE_RELEASE_FD")
        arm(names.split(","), int(fd), int(release) if release else None)


def armed() -> frozenset[str]:
    return _armed


def hit(name: str, *, trace: bool = True) -> None:
    """Pass the named point. Its second and later passes in this process are named
    `name#2`, `name#3`, ... (a retried model turn, the same call made twice).
    `trace=False`: the tracer does not see it (a point passed too often to trace)."""
    if (_tracer is None or not trace) and not _armed:
        return
    with _lock:
        _seen[name] = n = _seen.get(name, 0) + 1
    if n > 1:
        name = f"{name}#{n}"
    if _tracer is not None and trace:
        _tracer(name)
    if name not in _armed:
        return
    with _lock:
        _hits.append(name)
        _holding.add(name)
        announce, wait = _announce, _wait
        if announce is not None:
            announce(name)  # under the lock: announcements from threads never interleave
    if wait is None:
        threading.Event().wait()  # the parent kills this process; nothing runs past here
        return
    try:
        wait(name)
    finally:
        released(name)


def released(name: str) -> None:
    """The release of gate `name` has arrived (its thread may not have woken yet)."""
    with _lock:
        _holding.discard(name)


def holding(name: str) -> bool:
    """Whether a thread of this process is blocked at the armed gate `name` (a base name,
    without `#n`; any of its passes) and no release of it has arrived: the engine holds it
    there (scenarios.finish_order does not wait for a call held so)."""
    base = base_name(name)
    with _lock:
        return any(base_name(held) == base for held in _holding)


def hits() -> list[str]:
    """Armed gates hit so far in this process (for tests)."""
    with _lock:
        return list(_hits)
