"""The scripted model at a real local address: an HTTP/1.1 server on 127.0.0.1 that any
HTTP client in any process reaches (LiteLLM, the anthropic SDK, a client on aiohttp or
requests, a subprocess of the worker).

It serves the same ScriptedModel as the HTTP mock does in the worker: the same script,
the same provider state in the same state folder (so what it answered outlives the worker
that asked), the same gates (it runs in the worker, so a held model turn or stream holds
the worker the engine kills), the same faults as a socket shows them. `serve(model)`
starts it and puts its base URL in the environment:

  KILLPOINT_MODEL_URL   http://127.0.0.1:PORT (killpoint's own name for it)
  OPENAI_BASE_URL       …/v1, read by the openai SDK and LiteLLM (OPENAI_API_BASE too)
  ANTHROPIC_BASE_URL    the address itself, read by the anthropic SDK and LiteLLM

with a scripted API key under OPENAI_API_KEY and ANTHROPIC_API_KEY (a client that wants
a key has one, and no real key is sent anywhere) and the address in NO_PROXY. Stopping it
closes every connection and joins every thread it started.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any, Protocol

import httpx

from .faults import HeldTimeout
from .sse import Chunks

if TYPE_CHECKING:
    from .model import ScriptedModel

URL_VARIABLE = "KILLPOINT_MODEL_URL"
SCRIPTED_API_KEY = "sk-killpoint-scripted-model"
# Headers the server writes itself, from what it sends.
_FRAMING = {"content-length", "transfer-encoding", "connection", "content-encoding"}


def model_url() -> str:
    """The base URL of the scripted model served at a local address to this process (and
    its children): `http://127.0.0.1:PORT`, without `/v1`."""
    url = os.environ.get(URL_VARIABLE)
    if not url:
        raise RuntimeError(
            f"killpoint: no scripted model is served at a local address here ({URL_VARIABLE} "
            "is not set): an adapter asks for one with `local_model = True` (docs/adapters.md)"
        )
    return url


class Handler(Protocol):
    """What the server serves: the scripted model, or anything that answers a request as it
    does (the recording proxy, killpoint.scenarios.cassette.recorder)."""

    def handle(self, request: httpx.Request, *, via: str = "mock") -> httpx.Response: ...


class _Dropped(Exception):
    """The connection is to be closed without (the rest of) a response."""


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ModelServer  # type: ignore[assignment]

    def log_message(self, format: str, *args: Any) -> None:
        pass  # the request log in the model's state folder says what came

    def handle_one_request(self) -> None:
        try:
            super().handle_one_request()
        except (_Dropped, ConnectionError):
            self.close_connection = True
            with contextlib.suppress(OSError):
                self.connection.shutdown(socket.SHUT_RDWR)

    def _serve(self) -> None:
        request = httpx.Request(
            self.command,
            f"{self.server.url}{self.path}",
            headers=list(self.headers.items()),
            content=self._body(),
        )
        try:
            response = self.server.model.handle(request, via="local")
        except HeldTimeout as exc:
            self.server.hold(self.connection, exc.hold_seconds)
            raise _Dropped from exc
        except httpx.TransportError as exc:
            raise _Dropped from exc
        self._send(response)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_OPTIONS = _serve

    def _body(self) -> bytes:
        if "chunked" in self.headers.get("transfer-encoding", "").lower():
            parts: list[bytes] = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass  # trailers
                    return b"".join(parts)
                parts.append(self.rfile.read(size))
                self.rfile.readline()
        length = int(self.headers.get("content-length") or 0)
        return self.rfile.read(length) if length else b""

    def _send(self, response: httpx.Response) -> None:
        stream = response.stream
        self.send_response(response.status_code)
        for name, value in response.headers.multi_items():
            if name.lower() not in _FRAMING:
                self.send_header(name, value)
        if not isinstance(stream, Chunks):
            body = response.content
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        promised = response.headers.get("content-length")
        if promised is not None:  # a whole body, cut short
            self.send_header("content-length", promised)
        else:
            self.send_header("transfer-encoding", "chunked")
        self.end_headers()
        try:
            for chunk in stream:
                if promised is not None:
                    self.wfile.write(chunk)
                else:
                    self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
        except httpx.TransportError as exc:  # a cut: no more, not even the end
            raise _Dropped from exc
        if promised is None:
            self.wfile.write(b"0\r\n\r\n")


class ModelServer:
    """`model` served at http://127.0.0.1:PORT (a free port) from `start()` to `stop()`."""

    def __init__(self, model: Handler, host: str = "127.0.0.1") -> None:
        self.model = model
        self.host = host
        self._listener: socket.socket | None = None
        self._accepting: threading.Thread | None = None
        self._connections: dict[socket.socket, threading.Thread] = {}
        self._lock = threading.Lock()
        # Written to once at stop: wakes every held request at once.
        self._wake_read, self._wake_write = -1, -1
        self.url = ""

    def __repr__(self) -> str:
        return f"ModelServer({self.url or 'not started'})"

    def start(self) -> ModelServer:
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind((self.host, 0))
        listener.listen(64)
        self._listener = listener
        self._wake_read, self._wake_write = os.pipe()
        port = listener.getsockname()[1]
        self.url = f"http://{self.host}:{port}"
        self._accepting = threading.Thread(
            target=self._accept, name=f"killpoint-model-server:{port}", daemon=True
        )
        self._accepting.start()
        return self

    def _accept(self) -> None:
        # Its own reference: stop() sets the attribute to None before it shuts the socket.
        listener = self._listener
        assert listener is not None
        while True:
            try:
                conn, address = listener.accept()
            except OSError:
                return  # stop() shut the listener down
            conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            thread = threading.Thread(
                target=self._connection, args=(conn, address), name="killpoint-model-conn"
            )
            thread.daemon = True
            with self._lock:
                self._connections[conn] = thread
            thread.start()

    def _connection(self, conn: socket.socket, address: Any) -> None:
        try:
            _Handler(conn, address, self)  # type: ignore[arg-type]
        except OSError:
            pass  # the client went away
        finally:
            with self._lock:
                self._connections.pop(conn, None)
            with contextlib.suppress(OSError):
                conn.close()

    def hold(self, conn: socket.socket, seconds: float) -> None:
        """Answer nothing until the client closes the connection, `seconds` pass, or the
        server stops."""
        # The connection turns readable when the client closes it (a client waiting for an
        # answer sends nothing more); the wake pipe when the server stops.
        select.select([conn.fileno(), self._wake_read], [], [], seconds)

    def environ(self) -> dict[str, str]:
        """The variables that point clients here (see the module's docstring)."""
        local = "127.0.0.1,localhost"
        no_proxy = ",".join(v for v in (os.environ.get("NO_PROXY", ""), local) if v)
        return {
            URL_VARIABLE: self.url,
            "OPENAI_BASE_URL": f"{self.url}/v1",
            "OPENAI_API_BASE": f"{self.url}/v1",
            "ANTHROPIC_BASE_URL": self.url,
            "OPENAI_API_KEY": SCRIPTED_API_KEY,
            "ANTHROPIC_API_KEY": SCRIPTED_API_KEY,
            "NO_PROXY": no_proxy,
            "no_proxy": no_proxy,
        }

    def stop(self, timeout: float = 5.0) -> None:
        """Stop accepting, close every connection, wake every held request, and join every
        thread the server started (a thread a gate holds forever is the worker's to die
        with: it is a daemon, given up after `timeout`)."""
        listener, self._listener = self._listener, None
        if listener is None:
            return
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        if self._accepting is not None:
            self._accepting.join(timeout)
        os.write(self._wake_write, b"x")
        with self._lock:
            open_ = dict(self._connections)
        for conn in open_:
            with contextlib.suppress(OSError):
                conn.shutdown(socket.SHUT_RDWR)
        for thread in open_.values():
            thread.join(timeout)
        os.close(self._wake_read)
        os.close(self._wake_write)

    def threads(self) -> list[threading.Thread]:
        """The server's threads still alive (for tests: none after stop())."""
        with self._lock:
            found = list(self._connections.values())
        if self._accepting is not None:
            found.append(self._accepting)
        return [t for t in found if t.is_alive()]

    def __enter__(self) -> ModelServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@contextlib.contextmanager
def serve(model: ScriptedModel) -> Iterator[ModelServer]:
    """`model` at a local address, its base URL in this process's environment (and so in
    every child it starts) until the block ends; the environment is then restored."""
    with ModelServer(model) as server, environ(server.environ()):
        yield server


@contextlib.contextmanager
def environ(names: dict[str, str]) -> Iterator[None]:
    """`names` in this process's environment until the block ends, then the environment
    as it was (a variable that was not set is unset again)."""
    before = {name: os.environ.get(name) for name in names}
    os.environ.update(names)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


__all__ = [
    "SCRIPTED_API_KEY",
    "URL_VARIABLE",
    "Handler",
    "ModelServer",
    "environ",
    "model_url",
    "serve",
]
