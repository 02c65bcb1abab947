"""Server-sent events, and a response body sent chunk by chunk with a gate before each chunk.

A streamed reply is a list of events, each one chunk on the wire. The body passes the gate
`model:{turn}:chunk:{n}` before it sends chunk n, when n-1 chunks have gone out: in the
worker (the openai SDK through the HTTP mock) the client has read them; at the local
address they are written and flushed to the socket. So the engine can hold a stream, or
kill the worker, after any number of chunks (arm chunk n+1 to hold it after n). A stream
cut mid-way drops the connection after a chunk instead of sending the next one.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx

from . import gates
from .wire import json_body

CUT_MESSAGE = "scripted model: the connection dropped mid-stream (a stream cut)"


def event(data: Any, name: str | None = None) -> bytes:
    """One server-sent event: `event: name` when given, then one `data:` line."""
    payload = data.encode() if isinstance(data, str) else json_body(data)
    head = f"event: {name}\n".encode() if name else b""
    return head + b"data: " + payload + b"\n\n"


class Chunks(httpx.SyncByteStream, httpx.AsyncByteStream):
    """A body sent one chunk at a time. With `turn`, chunk n is preceded by the gate
    `model:{turn}:chunk:{n}` (the first and the last traced, the others only when
    armed); with
    `cut_after=n`, the connection drops right after chunk n."""

    def __init__(
        self, chunks: list[bytes], turn: int | None = None, *, cut_after: int | None = None
    ) -> None:
        self.chunks = chunks
        self.turn = turn
        self.cut_after = cut_after

    def __iter__(self) -> Iterator[bytes]:
        last = len(self.chunks)
        for n, chunk in enumerate(self.chunks, 1):
            if self.turn is not None:
                # Before chunk n, not after it: a client that stops reading at the stream's
                # last event still passes the last gate. The first and the last are traced
                # (a baseline shows which turns stream, and how long: the mid-stream
                # points); the others cost one lookup unless armed.
                gates.hit(gates.chunk_gate(self.turn, n), trace=n in (1, last))
            yield chunk
            if n == self.cut_after:
                raise httpx.RemoteProtocolError(CUT_MESSAGE)

    async def __aiter__(self) -> AsyncIterator[bytes]:
        # The same chunks; a held gate blocks the event loop, as the model gate does in
        # the worker (the engine kills or releases it).
        for chunk in self:
            yield chunk

    def joined(self) -> bytes:
        return b"".join(self.chunks)


def streamed(chunks: list[bytes], turn: int) -> httpx.Response:
    """An event stream of `chunks` for model turn `turn`."""
    headers = {"content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache"}
    return httpx.Response(200, headers=headers, stream=Chunks(chunks, turn))


__all__ = ["CUT_MESSAGE", "Chunks", "event", "streamed"]
