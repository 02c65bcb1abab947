"""The scripted model, served on the worker's HTTP transports (scenarios.direct_transport)
and, when an adapter asks, at a real local address (scenarios.model_server).

It speaks every wire format in scenarios.wire's table: the OpenAI Responses API
(`POST …/responses`), OpenAI Chat Completions (`POST …/chat/completions`) and the
Anthropic Messages API (`POST …/v1/messages`), each whole or streamed. Installed into a
process, it answers every openai SDK client built with defaults (openai 3.x sends through
httpx2; see http_mock). Its replies depend only on the conversation, and it keeps what it
answered in a state directory outside the worker, like a real provider: a runtime that
chains turns with `previous_response_id` gets the right reply from a fresh process after
a crash.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from collections import defaultdict
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import httpx
from respx.models import AllMockedAssertionError

from . import direct_transport, finish_order, gates, history
from . import http_mock as _http_mock  # noqa: F401  (registers the "httpx2" mocker)
from .anthropic_messages import MessagesFormat
from .behaviours import Regenerated, Replan, check, regenerate
from .cassette.replay import UNRECORDED_LOG, Replayer, serves_verbatim, verbatim
from .chat_completions import ChatCompletionsFormat
from .conversation import Conversation, canonical_arguments
from .faults import Fault, FaultCounter
from .own_writes import own_write
from .responses import ResponsesFormat, answer_for, response_body, response_id
from .script import Reply, Script
from .sse import Chunks
from .wire import RESPONSES, Parsed, RequestError, WireFormat, openai_error

FORMATS: tuple[WireFormat, ...] = (ResponsesFormat(), ChatCompletionsFormat(), MessagesFormat())
SERVED_PATHS = ("/v1/responses", "/v1/chat/completions", "/v1/messages")
RESPONSES_PATH = r".*/responses$"
TURNS_LOG = "turns.log"  # the model turn of every request, one line each, in state_dir
SERVED_LOG = "served.log"  # the model turn of every reply answered (200), one line each
# Every re-asked turn a behaviour answered otherwise, one JSON line each (regenerated_turns).
REGENERATED_LOG = "regenerated.log"
# Every HTTP request received, served or not, one JSON line each (requests_seen).
REQUESTS_LOG = "requests.log"


def requested_turns(state_dir: str | os.PathLike[str]) -> list[int]:
    """The model turns requested of a scripted model's state folder, by every process."""
    return [turn for turn, _ in turn_log(state_dir)]


def turn_log(state_dir: str | os.PathLike[str], name: str = TURNS_LOG) -> list[tuple[int, int]]:
    """(model turn, pid of the process that asked) of every request of a state folder, in
    order; `name=SERVED_LOG`: of every reply the model answered with a response."""
    try:
        text = (Path(state_dir) / name).read_text()
    except FileNotFoundError:
        return []
    return [(int(f[0]), int(f[1])) for line in text.splitlines() if len(f := line.split()) >= 2]


def _served_digests(state_dir: Path) -> list[tuple[str, int]]:
    """(conversation digest, pid) of every reply served, in order (the third field of
    each served line)."""
    try:
        text = (state_dir / SERVED_LOG).read_text()
    except FileNotFoundError:
        return []
    return [(f[2], int(f[1])) for line in text.splitlines() if len(f := line.split()) >= 3]


def regenerated_turns(state_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Each re-asked turn a behaviour answered: its turn, behaviour, the pid it was served
    to, and per call of the new reply its name, canonical arguments, call id, place and
    argument text, with the same of the first pass's matching call (`first_...`)."""
    try:
        text = (Path(state_dir) / REGENERATED_LOG).read_text()
    except FileNotFoundError:
        return []
    found = []
    for line in text.splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            continue  # a line torn by a kill
    return found


def requests_seen(state_dir: str | os.PathLike[str]) -> list[dict[str, Any]]:
    """Every HTTP request the scripted model of a state folder received, in order: method,
    path, format (None: a request no format serves), stream, pid, and `via` (mock: in the
    worker's HTTP transport; local: at the local address)."""
    try:
        text = (Path(state_dir) / REQUESTS_LOG).read_text()
    except FileNotFoundError:
        return []
    found = []
    for line in text.splitlines():
        try:
            found.append(json.loads(line))
        except ValueError:
            continue  # a line torn by a kill
    return found


def format_for(method: str, path: str) -> WireFormat | None:
    """The wire format that serves `method path`; None when none does."""
    if method != "POST":
        return None
    return next((f for f in FORMATS if f.path.fullmatch(path)), None)


def not_served(method: str, path: str) -> str:
    served = ", ".join(f"POST …{p}" for p in SERVED_PATHS)
    return (
        f"scripted model: {method} {path} is not a request it serves; it answers {served} "
        "(the OpenAI Responses API, OpenAI Chat Completions, the Anthropic Messages API)"
    )


class ScriptedModel:
    def __init__(
        self,
        script: Script,
        state_dir: str | os.PathLike[str],
        *,
        faults: Iterable[Fault] = (),
        record_traffic: bool = False,
        behaviour: str | None = None,
        replan: Replan | None = None,
    ) -> None:
        self.script = script
        # How a turn asked again after a crash is answered (behaviours.py); None: the same.
        self.behaviour = check(behaviour) if behaviour is not None else None
        self.replan = replan
        self.state_dir = Path(state_dir)
        (self.state_dir / "responses").mkdir(parents=True, exist_ok=True)
        self.faults = tuple(faults)
        self._counter = FaultCounter(self.state_dir / "faults.log")
        self._fault_lock = threading.Lock()
        self._hooks: dict[int, list[Callable[[], None]]] = defaultdict(list)
        self.record_traffic = record_traffic
        self.traffic: list[tuple[str, int, str]] = []  # (request body, status, response body)
        self._installed = False

    def __repr__(self) -> str:
        return f"ScriptedModel(state_dir={str(self.state_dir)!r})"

    def on_turn(self, turn: int, hook: Callable[[], None]) -> None:
        """Call `hook` when the request for model turn `turn` arrives (before it is answered)."""
        self._hooks[turn].append(hook)

    # -- serving ------------------------------------------------------------------------

    def handle(self, request: httpx.Request, *, via: str = "mock") -> httpx.Response:
        """Answer one request in its wire format (or 404 for one no format serves). A
        transport fault raises httpx's error (ReadTimeout, RemoteProtocolError)."""
        wire = format_for(request.method, request.url.path)
        if wire is None:
            self._log_request(request, None, via)
            return openai_error(404, not_served(request.method, request.url.path))
        response = self._answer(wire, request, via)
        if self.record_traffic:
            stream = response.stream
            body = stream.joined() if isinstance(stream, Chunks) else response.content
            self.traffic.append((request.content.decode(), response.status_code, body.decode()))
        return response

    def _answer(self, wire: WireFormat, request: httpx.Request, via: str) -> httpx.Response:
        try:
            body = json.loads(request.content)
        except ValueError:
            body = None
        self._log_request(request, wire, via, stream=isinstance(body, dict) and body.get("stream"))
        if body is None:
            return wire.error(
                400, f"scripted model: request body is not JSON: {request.content[:200]!r}"
            )
        if not isinstance(body, dict):
            return wire.error(400, "scripted model: the request body is not a JSON object")
        try:
            parsed = wire.parse(body, self._load)
        except RequestError as exc:
            return wire.error(400, f"scripted model: {exc.message}", exc.param)
        conversation = parsed.conversation
        turn = conversation.model_turn
        self._log_turn(TURNS_LOG, turn)
        history.record("model-request", turn=turn)
        for hook in self._hooks.get(turn, ()):
            hook()
        gates.hit(gates.model_gate(turn))
        cut = False
        for fault in self.faults:
            if fault.turn != turn:
                continue
            with self._fault_lock:  # two requests at once must not both take the last one
                due = self._counter.fired(fault) < fault.times
                if due:
                    self._counter.fire(fault)
            if not due:
                continue
            if fault.kind != "cut":
                response = fault.response(request, wire.error)
                history.record("model-refused", turn=turn, status=response.status_code)
                return response
            cut = True
            break
        if isinstance(self.script, Replayer):
            response = self._replay(self.script, wire, body, parsed, turn)
            return cut_short(response) if cut else response
        try:
            reply = self.script(conversation)
        except Exception as exc:  # a broken script must fail loudly, not hang
            history.record("model-refused", turn=turn, status=400)
            return wire.error(400, f"scripted model: the script raised {type(exc).__name__}: {exc}")
        regenerated = self._regenerated(conversation, reply)
        if regenerated is not None:
            reply = regenerated.reply
        # Sized from the conversation, not the request: a chained request and a resent
        # transcript of the same conversation cost the same, as with a real provider.
        answer = answer_for(
            conversation,
            reply,
            model=parsed.model,
            request_size=len(conversation.digest_source()),
            regenerated=regenerated,
        )
        if wire.name == RESPONSES:
            self._save(answer.id, {"input": parsed.items, "output": answer.output})
        if regenerated is not None:
            self._log_regenerated(conversation, turn, answer.output)
        # Served: what a provider bills. A worker killed before it reads the reply was
        # served all the same, so a run's stored count of model calls is at most this.
        self._log_turn(SERVED_LOG, turn, conversation.digest())
        response = wire.render(parsed, answer, turn)
        if cut:
            # The reply begins and drops half-way: the runtime never holds its calls.
            history.record("model-refused", turn=turn, status="cut")
            return cut_short(response)
        calls = [
            [item["name"], canonical_arguments(item["arguments"])]
            for item in answer.output
            if item["type"] == "function_call"
        ]
        history.record(
            "model-reply",
            turn=turn,
            response_id=answer.id,
            calls=calls,
            usage={
                "input_tokens": answer.input_tokens,
                "output_tokens": answer.output_tokens,
                "total_tokens": answer.input_tokens + answer.output_tokens,
            },
            regenerated=regenerated is not None,
        )
        finish_order.batch(calls)
        return response

    def _replay(
        self,
        replayer: Replayer,
        wire: WireFormat,
        body: dict[str, Any],
        parsed: Parsed,
        turn: int,
    ) -> httpx.Response:
        """A cassette's reply to this request: the recorded bytes as they were sent, or,
        for a turn a behaviour answers otherwise (or a request in another format), what
        the model said rendered again. A history never recorded is a miss (replay.py)."""
        conversation = parsed.conversation
        history = replayer.history(wire, body, parsed, self._load)
        found = replayer.find(history)
        if found is None:
            miss = replayer.miss(history, turn, wire.name)
            self._append(UNRECORDED_LOG, json.dumps(miss, ensure_ascii=True))
            return wire.error(400, replayer.miss_message(miss))
        said = found.said
        regenerated = self._regenerated(conversation, said.reply())
        if regenerated is None and serves_verbatim(found.interaction, wire.name, parsed.stream):
            response = verbatim(found.interaction, turn)
            rid, output = said.response_id, list(said.output)
        else:
            answer = said.answer(regenerated)
            response = wire.render(parsed, answer, turn)
            rid, output = answer.id, answer.output
        if wire.name == RESPONSES and rid:
            self._save(rid, {"input": parsed.items, "output": output})
        if regenerated is not None:
            self._log_regenerated(conversation, turn, output, first=said.calls)
        self._log_turn(SERVED_LOG, turn, conversation.digest())
        return response

    def _load(self, rid: str) -> dict[str, Any] | None:
        if not rid.replace("_", "").isalnum():
            return None
        try:
            loaded: dict[str, Any] = json.loads(self._path(rid).read_text())
        except FileNotFoundError:
            return None
        return loaded

    def _regenerated(self, conversation: Conversation, reply: Reply) -> Regenerated | None:
        """The behaviour's reply when this conversation was served before to another
        process (a turn re-asked after a crash); None on every first pass, and when the
        same process asks again (an SDK's retry is no crash)."""
        if self.behaviour is None:
            return None
        digest = conversation.digest()
        served = [pid for d, pid in _served_digests(self.state_dir) if d == digest]
        if not served or all(pid == os.getpid() for pid in served):
            return None
        return regenerate(self.behaviour, conversation, reply, len(served), self.replan)

    def _log_regenerated(
        self,
        conversation: Conversation,
        turn: int,
        output: list[dict[str, Any]],
        first: list[dict[str, Any]] | None = None,
    ) -> None:
        """What the first pass served for this turn against what it got now, per call: a
        finding names both call ids. A reordered call keeps its id (matched by id); the
        others are matched by their place in the batch. `first`: the first pass's calls
        (a cassette's recorded ones); by default the script's."""
        if first is None:
            body = response_body(conversation, self.script(conversation), model="", request_size=0)
            first = [i for i in body["output"] if i["type"] == "function_call"]
        by_id = {i["call_id"]: n for n, i in enumerate(first)}
        calls = []
        for position, item in enumerate(i for i in output if i["type"] == "function_call"):
            was = by_id.get(item["call_id"], position if position < len(first) else None)
            before = first[was] if was is not None else None
            calls.append(
                {
                    "name": item["name"],
                    "arguments": canonical_arguments(item["arguments"]),
                    "call_id": item["call_id"],
                    "position": position,
                    "text": item["arguments"],
                    "first_call_id": before["call_id"] if before else None,
                    "first_position": was,
                    "first_text": before["arguments"] if before else None,
                }
            )
        line = json.dumps(
            {"turn": turn, "behaviour": self.behaviour, "pid": os.getpid(), "calls": calls},
            ensure_ascii=True,
        )
        self._append(REGENERATED_LOG, line)

    def forget(self) -> int:
        """Forget every response stored so far, as a provider whose stored responses have
        expired: a request chained to one of them by `previous_response_id` gets a 400,
        and the runtime must resend what it needs. Returns how many were forgotten."""
        forgotten = 0
        for path in (self.state_dir / "responses").iterdir():
            path.unlink()
            forgotten += 1
        return forgotten

    def _log_request(
        self, request: httpx.Request, wire: WireFormat | None, via: str, *, stream: Any = False
    ) -> None:
        line = {
            "method": request.method,
            "path": request.url.path,
            "format": wire.name if wire is not None else None,
            "stream": bool(stream),
            "pid": os.getpid(),
            "via": via,
        }
        self._append(REQUESTS_LOG, json.dumps(line, ensure_ascii=True))

    def _unrouted(self, request: httpx.Request) -> httpx.Response:
        """A request in the worker's HTTP transport that no route serves: logged, then
        refused as respx refuses it, before anything reaches the network."""
        self._log_request(request, None, "mock")
        raise AllMockedAssertionError(f"RESPX: {request!r} not mocked!")

    def _log_turn(self, log: str, turn: int, digest: str = "") -> None:
        self._append(log, f"{turn} {os.getpid()} {digest}".rstrip())

    def _append(self, log: str, line: str) -> None:
        # One O_APPEND write per line: a SIGKILL cannot tear it or take it back.
        with own_write("the scripted model's state"):
            fd = os.open(self.state_dir / log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                os.write(fd, f"{line}\n".encode())
            finally:
                os.close(fd)

    def _path(self, rid: str) -> Path:
        return self.state_dir / "responses" / f"{rid}.json"

    def _save(self, rid: str, data: dict[str, Any]) -> None:
        # Atomic: a worker killed mid-write leaves the old file or none, never half of one.
        with own_write("the scripted model's state"):
            fd, tmp = tempfile.mkstemp(dir=self.state_dir / "responses")
            with os.fdopen(fd, "w") as f:
                f.write(json.dumps(data))  # one string: json.dump would encode piecewise
            os.replace(tmp, self._path(rid))

    # -- installing ---------------------------------------------------------------------

    def install(self) -> ScriptedModel:
        """Route every request of this process's httpx2 transports (every openai SDK client)
        to a path of a served format here; anything else fails loudly. Served straight
        from the transports (scenarios.direct_transport), not through respx's router."""
        if not self._installed:
            direct_transport.install(self._routed)
            self._installed = True
        return self

    def uninstall(self) -> None:
        if self._installed:
            direct_transport.uninstall(self._routed)
            self._installed = False

    def _routed(self, request: httpx.Request) -> httpx.Response:
        """What respx's routes did: a served format's path to `handle`, anything else
        refused."""
        if format_for(request.method, request.url.path) is None:
            return self._unrouted(request)
        return self.handle(request)

    def __enter__(self) -> ScriptedModel:
        self.install()
        return self

    def __exit__(self, *exc: object) -> None:
        self.uninstall()


def cut_short(response: httpx.Response) -> httpx.Response:
    """The same response, its connection dropped half-way: a stream after half of its
    chunks (its last event never sent), a whole body after half of its bytes (the length
    it announced never reached)."""
    stream = response.stream
    if isinstance(stream, Chunks):
        stream.cut_after = max(1, len(stream.chunks) // 2)
        return response
    body = response.content
    half = max(1, len(body) // 2)
    headers = {k: v for k, v in response.headers.items() if k.lower() != "content-length"}
    headers["content-length"] = str(len(body))
    return httpx.Response(
        response.status_code,
        headers=headers,
        stream=Chunks([body[:half], body[half:]], cut_after=1),
    )


__all__ = [
    "FORMATS",
    "REGENERATED_LOG",
    "REQUESTS_LOG",
    "SERVED_LOG",
    "TURNS_LOG",
    "ScriptedModel",
    "format_for",
    "regenerated_turns",
    "requested_turns",
    "requests_seen",
    "response_id",
    "turn_log",
]
