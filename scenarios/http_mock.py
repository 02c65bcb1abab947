"""A respx mocker for httpx2, the HTTP client under openai 3.x.

respx patches legacy `httpx` and `httpcore` only, so a default `openai.AsyncOpenAI()`
would reach the network. This mocker patches httpx2's own transports and converts
requests and responses between httpx2 and httpx, so respx routes (written against
httpx) serve any openai client that is built with defaults, unmodified.

A response whose body is streamed (server-sent events, a body cut short) is relayed chunk
by chunk, so the client reads each chunk as it is made: a gate between two chunks holds
the client after the first.

Use `respx.mock(using="httpx2")` or `respx.MockRouter(using="httpx2")`.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any, ClassVar

import httpx
import httpx2
from respx.mocks import AbstractRequestMocker


def _to_httpx2_error(exc: httpx.TransportError) -> httpx2.TransportError:
    # Same class names in both libraries; the SDK catches httpx2's to retry or give up. A
    # subclass of our own (faults.HeldTimeout) is its nearest httpx ancestor.
    for ancestor in type(exc).__mro__:
        cls = getattr(httpx2, ancestor.__name__, None)
        if isinstance(cls, type) and issubclass(cls, httpx2.TransportError):
            return cls(str(exc))
    return httpx2.TransportError(str(exc))


class _Relay(httpx2.SyncByteStream, httpx2.AsyncByteStream):
    """An httpx response's streamed body as httpx2's, one chunk at a time, with its
    transport errors (a connection dropped mid-body) as httpx2's."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response

    def __iter__(self) -> Iterator[bytes]:
        try:
            yield from self.response.iter_raw()
        except httpx.TransportError as exc:
            raise _to_httpx2_error(exc) from exc

    async def __aiter__(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self.response.aiter_raw():
                yield chunk
        except httpx.TransportError as exc:
            raise _to_httpx2_error(exc) from exc


def _streamed(response: httpx.Response) -> bool:
    # respx has read every ByteStream (a body given whole) already.
    return not isinstance(response.stream, httpx.ByteStream)


class HTTPX2Mocker(AbstractRequestMocker):
    name = "httpx2"
    targets: ClassVar[list[str]] = [
        "httpx2._transports.default.HTTPTransport",
        "httpx2._transports.default.AsyncHTTPTransport",
    ]
    target_methods: ClassVar[list[str]] = ["handle_request", "handle_async_request"]

    @classmethod
    def to_httpx_request(cls, **kwargs: Any) -> httpx.Request:
        request: httpx2.Request = kwargs["request"]
        return httpx.Request(
            request.method,
            str(request.url),
            headers=request.headers.multi_items(),
            content=request.content,
        )

    @classmethod
    def prepare_sync_request(cls, httpx_request: httpx.Request, **kwargs: Any) -> Any:
        kwargs["request"].read()
        return httpx_request, kwargs

    @classmethod
    async def prepare_async_request(cls, httpx_request: httpx.Request, **kwargs: Any) -> Any:
        await kwargs["request"].aread()
        return httpx_request, kwargs

    @classmethod
    def _send_sync_request(cls, httpx_request: httpx.Request, **kwargs: Any) -> Any:
        try:
            return super()._send_sync_request(httpx_request, **kwargs)
        except httpx.TransportError as exc:
            raise _to_httpx2_error(exc) from exc

    @classmethod
    async def _send_async_request(cls, httpx_request: httpx.Request, **kwargs: Any) -> Any:
        try:
            return await super()._send_async_request(httpx_request, **kwargs)
        except httpx.TransportError as exc:
            raise _to_httpx2_error(exc) from exc

    @classmethod
    def from_sync_httpx_response(
        cls, httpx_response: httpx.Response, target: Any, **kwargs: Any
    ) -> httpx2.Response:
        if _streamed(httpx_response):
            return httpx2.Response(
                httpx_response.status_code,
                headers=httpx_response.headers.multi_items(),
                stream=_Relay(httpx_response),
                request=kwargs.get("request"),
            )
        return httpx2.Response(
            httpx_response.status_code,
            headers=httpx_response.headers.multi_items(),
            content=httpx_response.read(),
            request=kwargs.get("request"),
        )

    @classmethod
    async def from_async_httpx_response(
        cls, httpx_response: httpx.Response, target: Any, **kwargs: Any
    ) -> httpx2.Response:
        if _streamed(httpx_response):
            return cls.from_sync_httpx_response(httpx_response, target, **kwargs)
        return httpx2.Response(
            httpx_response.status_code,
            headers=httpx_response.headers.multi_items(),
            content=await httpx_response.aread(),
            request=kwargs.get("request"),
        )
