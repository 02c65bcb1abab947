"""The scripted model on httpx2's own transports, without respx's router on the way.

Every request of a worker's openai SDK client goes to the scripted model, and nowhere
else: respx did that by starting a mock router in each worker (its patchers, one route per
wire format, a regular expression matched against every request's URL, the router's own
request resolution) and then converting the request and the reply twice. The model needs
none of it: its own `handle` finds the wire format from the path. So the transports'
`handle_request` and `handle_async_request` are replaced here, while a model is installed,
by one function that hands the request (read whole, as respx does) to the model and its
reply back, with http_mock's conversions: a streamed reply relayed chunk by chunk, a
transport fault raised as httpx2's error. A request no format serves is refused as respx
refused it (AllMockedAssertionError), before anything reaches the network.

Installed models stack (the last installed serves) and the transports get their own
methods back when the last is uninstalled. respx itself stays for tests that route by
hand (http_mock's mocker, the `openai_mock` fixture).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import httpx
import httpx2
from httpx2._transports.default import AsyncHTTPTransport, HTTPTransport

from .http_mock import _Relay, _streamed, _to_httpx2_error

Serve = Callable[[httpx.Request], httpx.Response]

_lock = threading.Lock()
_serving: list[Serve] = []  # the installed models' entry points; the last serves
_originals: dict[str, Any] = {}


def _as_httpx(request: httpx2.Request) -> httpx.Request:
    return httpx.Request(
        request.method,
        str(request.url),
        headers=request.headers.multi_items(),
        content=request.content,
    )


def _as_httpx2(response: httpx.Response, request: httpx2.Request) -> httpx2.Response:
    if _streamed(response):
        stream: Any = _Relay(response)
        return httpx2.Response(
            response.status_code,
            headers=response.headers.multi_items(),
            stream=stream,
            request=request,
        )
    return httpx2.Response(
        response.status_code,
        headers=response.headers.multi_items(),
        content=response.read(),
        request=request,
    )


def _serve(request: httpx2.Request) -> httpx2.Response:
    serve = _serving[-1]
    try:
        response = serve(_as_httpx(request))
    except httpx.TransportError as exc:
        raise _to_httpx2_error(exc) from exc
    return _as_httpx2(response, request)


def _handle_request(transport: HTTPTransport, request: httpx2.Request) -> httpx2.Response:
    request.read()
    return _serve(request)


async def _handle_async_request(
    transport: AsyncHTTPTransport, request: httpx2.Request
) -> httpx2.Response:
    await request.aread()
    return _serve(request)


def install(serve: Serve) -> None:
    """Every request of this process's httpx2 transports goes to `serve` from now on."""
    with _lock:
        if not _serving:
            _originals["sync"] = HTTPTransport.__dict__["handle_request"]
            _originals["async"] = AsyncHTTPTransport.__dict__["handle_async_request"]
            HTTPTransport.handle_request = _handle_request  # type: ignore[method-assign,assignment]
            AsyncHTTPTransport.handle_async_request = _handle_async_request  # type: ignore[method-assign,assignment]
        _serving.append(serve)


def uninstall(serve: Serve) -> None:
    """`serve` no longer serves; the transports are their own again once none does."""
    with _lock:
        for n in range(len(_serving) - 1, -1, -1):
            if _serving[n] == serve:
                del _serving[n]
                break
        if not _serving and _originals:
            HTTPTransport.handle_request = _originals.pop("sync")  # type: ignore[method-assign]
            AsyncHTTPTransport.handle_async_request = _originals.pop("async")  # type: ignore[method-assign]


def installed() -> bool:
    return bool(_serving)


__all__ = ["Serve", "install", "installed", "uninstall"]
