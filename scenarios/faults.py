"""Model faults injected at the HTTP layer: 429, 500, a timeout, a dropped connection, and
a reply cut mid-way. Each works on every wire format, in the format's own error shape.

In the worker (the openai SDK through the HTTP mock) a timeout and a dropped connection
are the transport errors the SDK would meet. At the local address they are what a socket
does: a dropped connection is closed without a response; a timeout is a request that is
never answered: the client's own read timeout decides when it gives up, and the server
closes the connection after `hold_seconds` if the client has not.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx

from .wire import openai_error

FaultKind = Literal["429", "500", "timeout", "disconnect", "cut"]
FAULT_KINDS: tuple[str, ...] = ("429", "500", "timeout", "disconnect", "cut")


class HeldTimeout(httpx.ReadTimeout):
    """A timeout fault: in the worker the client's read times out at once; at the local
    address the request is held unanswered for `hold_seconds` at most."""

    def __init__(self, message: str, *, request: httpx.Request, hold_seconds: float) -> None:
        super().__init__(message, request=request)
        self.hold_seconds = hold_seconds


@dataclass(frozen=True)
class Fault:
    """The first `times` requests for model turn `turn` fail with `kind`.

    `cut`: the reply begins and the connection drops half-way (a stream after half of
    its events, without its last one; a whole body after half of its bytes).

    Like a real provider's outage, the count lives outside the worker (a file in the
    model's state dir), so a fresh worker after a crash sees the fault as spent.
    """

    turn: int
    kind: FaultKind
    times: int = 1
    retry_after_ms: int = 1
    # At the local address: how long a `timeout` holds an unanswered request at most.
    hold_seconds: float = 5.0

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(
                f"scenarios: fault kind {self.kind!r} is unknown; choose one of {FAULT_KINDS}"
            )

    def response(
        self,
        request: httpx.Request,
        error: Callable[[int, str], httpx.Response] | None = None,
    ) -> httpx.Response:
        """The failing answer in the shape `error(status, message)` gives (OpenAI's by
        default), or raise, for transport faults. Not for `cut`, which needs the reply."""
        if self.kind == "timeout":
            raise HeldTimeout(
                "scripted model: read timed out", request=request, hold_seconds=self.hold_seconds
            )
        if self.kind == "disconnect":
            raise httpx.RemoteProtocolError(
                "scripted model: server disconnected without sending a response",
                request=request,
            )
        if self.kind == "cut":
            raise ValueError("scenarios: a cut fault cuts a reply; it has no response of its own")
        status = int(self.kind)
        message = "Rate limit reached" if status == 429 else "The server had an error"
        answer = (error or openai_error)(status, f"scripted model: {message}")
        # Both are retryable; the delay the server asks for keeps an SDK's retry fast and
        # free of its randomised backoff (the openai and anthropic SDKs honour
        # retry-after-ms on any status).
        answer.headers["retry-after-ms"] = str(self.retry_after_ms)
        return answer


class FaultCounter:
    """How often each fault fired, kept in a file: one line per firing."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fired(self, fault: Fault) -> int:
        try:
            lines = self.path.read_text().splitlines()
        except FileNotFoundError:
            return 0
        return lines.count(f"{fault.turn}:{fault.kind}")

    def fire(self, fault: Fault) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            # Like the ledger: written through to the kernel, so a kill cannot lose it.
            os.write(fd, f"{fault.turn}:{fault.kind}\n".encode())
        finally:
            os.close(fd)
