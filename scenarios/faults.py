"""Model faults injected at the HTTP layer: 429, 500, a timeout, a dropped connection."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx

FaultKind = Literal["429", "500", "timeout", "disconnect"]
FAULT_KINDS: tuple[str, ...] = ("429", "500", "timeout", "disconnect")


@dataclass(frozen=True)
class Fault:
    """The first `times` requests for model turn `turn` fail with `kind`.

    Like a real provider's outage, the count lives outside the worker (a file in the
    model's state dir), so a fresh worker after a crash sees the fault as spent.
    """

    turn: int
    kind: FaultKind
    times: int = 1
    retry_after_ms: int = 1

    def __post_init__(self) -> None:
        if self.kind not in FAULT_KINDS:
            raise ValueError(
                f"scenarios: fault kind {self.kind!r} is unknown; choose one of {FAULT_KINDS}"
            )

    def response(self, request: httpx.Request) -> httpx.Response:
        """The failing answer (or raise, for transport faults)."""
        if self.kind == "timeout":
            raise httpx.ReadTimeout("scripted model: read timed out", request=request)
        if self.kind == "disconnect":
            raise httpx.RemoteProtocolError(
                "scripted model: server disconnected without sending a response",
                request=request,
            )
        status = int(self.kind)
        # Both are retryable; the delay the server asks for keeps an SDK's retry fast and
        # free of its randomised backoff (openai honours retry-after-ms on any status).
        headers = {"retry-after-ms": str(self.retry_after_ms)}
        message = "Rate limit reached" if status == 429 else "The server had an error"
        return httpx.Response(
            status,
            headers=headers,
            json={"error": {"message": f"scripted model: {message}", "type": "server_error"}},
        )


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
