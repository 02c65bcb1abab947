"""The recording proxy: served at a local address (model_server.ModelServer), it passes each
request of the agent on to the real provider and keeps what came back.

Every request in a format the scripted model serves (model.FORMATS) is read into its
history (after the user's redactions) and kept with the provider's response: a whole body
as its text, a stream as its events. The agent gets the response as the cassette keeps it
(redactions applied), so the recorded run is the run a replay reproduces. A request in no
such format is passed on and named in `unrecordable` (a replay could not answer it).

Credentials pass through to the provider and are never kept: headers are kept without
them (redact.SECRET_HEADERS), and every credential value seen is collected in `secrets`
so that the writer masks it wherever else it might appear. An agent built by a killpoint
adapter sends the scripted model's placeholder key; the proxy sends the provider the key
of the environment instead (`keys`).
"""

from __future__ import annotations

import json
import threading
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from ..model import format_for
from ..model_server import SCRIPTED_API_KEY
from ..sse import Chunks
from ..wire import MESSAGES, RequestError, WireFormat, openai_error
from .file import Interaction, Response
from .history import History
from .redact import FRAMING_HEADERS, Redactions
from .replies import ReplyError, read, split_events

OPENAI_URL = "https://api.openai.com/v1"
ANTHROPIC_URL = "https://api.anthropic.com"
# Headers that carry a credential, by the format's provider.
CREDENTIALS = ("authorization", "x-api-key", "api-key")
# The request's hop-by-hop and framing headers are the proxy's own to send.
_NOT_FORWARDED = FRAMING_HEADERS | {"accept-encoding"}


@dataclass(frozen=True)
class Upstream:
    """Where the real provider is: an OpenAI-compatible base URL (with its `/v1`), and the
    Anthropic API's."""

    openai: str = OPENAI_URL
    anthropic: str = ANTHROPIC_URL

    def url(self, wire: WireFormat | None, path: str, query: bytes) -> str:
        """The provider's URL for a request the agent sent to `path` at the proxy (whose
        OpenAI base URL is `…/v1` and Anthropic base URL is the address itself)."""
        if wire is not None and wire.name == MESSAGES:
            url = self.anthropic.rstrip("/") + path
        else:
            url = self.openai.rstrip("/") + (path[3:] if path.startswith("/v1/") else path)
        return url + (f"?{query.decode()}" if query else "")


@dataclass(frozen=True)
class Unreached:
    """A request the provider could not be reached for: its base URL (as `Upstream` has
    it) and what the client raised."""

    base: str
    error: str


class Recorder:
    """Passes requests on to `upstream` and keeps each answered one as an Interaction;
    counts every request it got (`received`) and each the provider was out of reach for
    (`unreached`), so that an empty recording says which of the two it was."""

    def __init__(
        self,
        upstream: Upstream,
        redactions: Redactions | None = None,
        *,
        keys: Mapping[str, str] | None = None,
        timeout: float = 600.0,
    ) -> None:
        self.upstream = upstream
        self.redactions = redactions or Redactions()
        # "openai" / "anthropic" -> the key sent in place of the scripted placeholder.
        self.keys = dict(keys or {})
        self.interactions: list[Interaction] = []
        self.unrecordable: list[str] = []
        self.received = 0
        self.unreached: list[Unreached] = []
        self.secrets: set[str] = set(v for v in self.keys.values() if v)
        self._responses: dict[str, dict[str, Any]] = {}  # Responses API chaining
        self._lock = threading.Lock()
        self._client = httpx.Client(timeout=httpx.Timeout(timeout, connect=30.0))
        self._hooks: dict[int, list[Callable[[], None]]] = defaultdict(list)

    def on_turn(self, turn: int, hook: Callable[[], None]) -> None:
        """Call `hook` when the request for model turn `turn` arrives, before it is passed
        on (a scenario that cancels its run at a turn)."""
        self._hooks[turn].append(hook)

    def __repr__(self) -> str:
        return f"Recorder({self.upstream.openai!r}, {self.upstream.anthropic!r})"

    def close(self) -> None:
        self._client.close()

    # -- the proxy ------------------------------------------------------------------------

    def handle(self, request: httpx.Request, *, via: str = "local") -> httpx.Response:
        with self._lock:
            self.received += 1
        wire = format_for(request.method, request.url.path)
        if wire is not None and self._hooks:
            self._call_hooks(wire, request)
        url = self.upstream.url(wire, request.url.path, request.url.query)
        headers = self._forwarded(request, wire)
        try:
            upstream = self._client.request(
                request.method, url, headers=headers, content=request.content
            )
        except httpx.HTTPError as exc:
            # The provider cannot be reached: the agent hears it as a provider's error.
            message = f"killpoint record: the provider at {url} cannot be reached: {exc}"
            anthropic = wire is not None and wire.name == MESSAGES
            base = self.upstream.anthropic if anthropic else self.upstream.openai
            with self._lock:
                self.unreached.append(
                    Unreached(base, " ".join(f"{type(exc).__name__}: {exc}".split()))
                )
            return openai_error(502, message)
        text = upstream.content.decode("utf-8", "replace")
        streamed = "text/event-stream" in upstream.headers.get("content-type", "")
        events = split_events(text) if streamed else None
        body, events = self._redacted(text, events)
        if wire is None:
            with self._lock:
                self.unrecordable.append(f"{request.method} {request.url.path}")
        else:
            self._keep(wire, request, upstream, body, events)
        sent = {k: v for k, v in upstream.headers.items() if k.lower() not in FRAMING_HEADERS}
        if events is not None:
            return httpx.Response(
                upstream.status_code, headers=sent, stream=Chunks([e.encode() for e in events])
            )
        return httpx.Response(upstream.status_code, headers=sent, content=(body or "").encode())

    def _call_hooks(self, wire: WireFormat, request: httpx.Request) -> None:
        try:
            parsed = wire.parse(json.loads(request.content), self._responses.get)
        except (ValueError, RequestError, AttributeError):
            return
        for hook in self._hooks.get(parsed.conversation.model_turn, ()):
            hook()

    def _forwarded(self, request: httpx.Request, wire: WireFormat | None) -> dict[str, str]:
        provider = "anthropic" if wire is not None and wire.name == MESSAGES else "openai"
        headers: dict[str, str] = {}
        for name, value in request.headers.multi_items():
            lower = name.lower()
            if lower in _NOT_FORWARDED:
                continue
            if lower in CREDENTIALS:
                if SCRIPTED_API_KEY in value and self.keys.get(provider):
                    value = value.replace(SCRIPTED_API_KEY, self.keys[provider])
                with self._lock:
                    self.secrets.add(value)
                    self.secrets.add(value.partition(" ")[2])  # the token of "Bearer TOKEN"
            headers[name] = value
        return headers

    def _redacted(self, text: str, events: list[str] | None) -> tuple[str | None, list[str] | None]:
        """The response as the cassette keeps it (and the agent gets it): each JSON body or
        event's data with the user's paths redacted; untouched where none matched."""
        if events is None:
            return _redact_json(text, self.redactions), None
        return None, [_redact_event(e, self.redactions) for e in events]

    def _keep(
        self,
        wire: WireFormat,
        request: httpx.Request,
        upstream: httpx.Response,
        body: str | None,
        events: list[str] | None,
    ) -> None:
        try:
            sent = json.loads(request.content)
        except ValueError:
            sent = None
        if not isinstance(sent, dict):
            with self._lock:
                self.unrecordable.append(f"{request.method} {request.url.path} (not JSON)")
            return
        redacted, _ = self.redactions.body(sent)
        with self._lock:
            try:
                parsed = wire.parse(redacted, self._responses.get)
            except RequestError as exc:
                self.unrecordable.append(f"{request.method} {request.url.path}: {exc.message}")
                return
            history = History.of(wire.name, redacted, parsed.conversation, parsed.items)
            response = Response(
                upstream.status_code,
                self.redactions.kept_headers(upstream.headers.multi_items()),
                body,
                tuple(events) if events is not None else None,
            )
            said = None
            if response.ok:
                try:
                    said = read(wire.name, body, events)
                except ReplyError as exc:
                    self.unrecordable.append(f"{request.method} {request.url.path}: {exc}")
                    return
                if said.response_id:
                    output = list(said.output)
                    self._responses[said.response_id] = {"input": parsed.items, "output": output}
            self.interactions.append(
                Interaction(
                    turn=parsed.conversation.model_turn,
                    format=wire.name,
                    method=request.method,
                    path=request.url.path,
                    stream=parsed.stream,
                    model=parsed.model,
                    headers=self.redactions.kept_headers(request.headers.multi_items()),
                    history=history,
                    response=response,
                    said=said,
                )
            )

    # -- where the agent is pointed ---------------------------------------------------------

    @staticmethod
    def environ(url: str, no_proxy: str = "") -> dict[str, str]:
        """The variables that point an agent's model clients at the proxy at `url` (its
        API keys stay the environment's own)."""
        local = "127.0.0.1,localhost"
        skip = ",".join(v for v in (no_proxy, local) if v)
        return {
            "KILLPOINT_MODEL_URL": url,
            "OPENAI_BASE_URL": f"{url}/v1",
            "OPENAI_API_BASE": f"{url}/v1",
            "ANTHROPIC_BASE_URL": url,
            "NO_PROXY": skip,
            "no_proxy": skip,
        }


def _redact_json(text: str, redactions: Redactions) -> str:
    if not redactions.paths:
        return text
    try:
        data = json.loads(text)
    except ValueError:
        return text
    redacted, changed = redactions.body(data)
    return json.dumps(redacted, ensure_ascii=False) if changed else text


def _redact_event(event: str, redactions: Redactions) -> str:
    if not redactions.paths or "data:" not in event:
        return event
    lines = event.split("\n")
    for n, line in enumerate(lines):
        if line.startswith("data:"):
            data = line[5:].lstrip()
            redacted = _redact_json(data, redactions)
            if redacted != data:
                lines[n] = f"data: {redacted}"
    return "\n".join(lines)


__all__ = ["ANTHROPIC_URL", "OPENAI_URL", "Recorder", "Unreached", "Upstream"]
