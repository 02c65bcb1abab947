"""Gates: named points where a worker stops and tells its parent, so a kill lands exactly there.

Names:
  model:{turn}:received        the scripted model got the request for model turn `turn`
  tool:{name}:{sig}:started    a tool call began (sig = call_signature of its arguments)
  tool:{name}:{sig}:finished   a tool call returned, before its result goes back to the runtime

A process arms gates with `arm()` (or the KILLPOINT_GATES / KILLPOINT_GATE_FD
environment variables). When an armed gate is hit, the name and a newline are
written to the announce fd, then the hitting thread blocks: forever (the parent
is about to SIGKILL the process) or until one byte arrives on the release fd.
With nothing armed, `hit()` is one set lookup.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterable

from .conversation import canonical_arguments

_lock = threading.Lock()
_armed: frozenset[str] = frozenset()
_announce_fd: int | None = None
_release_fd: int | None = None
_hits: list[str] = []


def call_signature(arguments: str | dict[str, object]) -> str:
    return hashlib.sha256(canonical_arguments(arguments).encode()).hexdigest()[:12]


def tool_gate(name: str, arguments: str | dict[str, object], phase: str) -> str:
    return f"tool:{name}:{call_signature(arguments)}:{phase}"


def model_gate(turn: int) -> str:
    return f"model:{turn}:received"


def arm(names: Iterable[str], announce_fd: int, release_fd: int | None = None) -> None:
    global _armed, _announce_fd, _release_fd
    with _lock:
        _armed = frozenset(names)
        _announce_fd = announce_fd
        _release_fd = release_fd


def disarm() -> None:
    arm((), announce_fd=-1)


def arm_from_env() -> None:
    names = os.environ.get("KILLPOINT_GATES", "")
    fd = os.environ.get("KILLPOINT_GATE_FD")
    if names and fd:
        release = os.environ.get("KILLPOINT_GATE_RELEASE_FD")
        arm(names.split(","), int(fd), int(release) if release else None)


def armed() -> frozenset[str]:
    return _armed


def hit(name: str) -> None:
    if name not in _armed:
        return
    with _lock:
        _hits.append(name)
        announce, release = _announce_fd, _release_fd
    assert announce is not None
    os.write(announce, f"{name}\n".encode())
    if release is None:
        threading.Event().wait()  # the parent kills this process; nothing runs past here
    else:
        os.read(release, 1)


def hits() -> list[str]:
    """Armed gates hit so far in this process (for tests)."""
    with _lock:
        return list(_hits)
