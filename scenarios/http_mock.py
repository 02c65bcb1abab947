"""A respx mocker for httpx2, the HTTP client under openai 3.x.

respx patches legacy `httpx` and `httpcore` only, so a default `openai.AsyncOpenAI()`
would reach the network. This mocker patches httpx2's own transports and converts
requests and responses between httpx2 and httpx, so respx routes (written against
httpx) serve any openai client that is built with defaults, unmodified.

Use `respx.mock(using="httpx2")` or `respx.MockRouter(using="httpx2")`.
"""

from __future__ import annotations

from typing import Any, ClassVar

import httpx
import httpx2
from respx.mocks import AbstractRequestMocker


def _to_httpx2_error(exc: httpx.TransportError) -> httpx2.TransportError:
    # Same class names in both libraries; the SDK catches httpx2's to retry or give up.
    cls = getattr(httpx2, type(exc).__name__, None)
    if not (isinstance(cls, type) and issubclass(cls, httpx2.TransportError)):
        cls = httpx2.TransportError
    return cls(str(exc))


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
        return httpx2.Response(
            httpx_response.status_code,
            headers=httpx_response.headers.multi_items(),
            content=await httpx_response.aread(),
            request=kwargs.get("request"),
        )
