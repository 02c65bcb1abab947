"""A stand-in for a real model provider: a built-in scenario's scripted model at a local
address that, like a provider, answers only requests carrying its API key.

    OPENAI_API_KEY=sk-any python -m killpoint.scenarios.stand_in research -- COMMAND ...

serves the `research` script at http://127.0.0.1:PORT and runs COMMAND with
OPENAI_BASE_URL (…/v1) and ANTHROPIC_BASE_URL pointing at it, then exits with COMMAND's
status. Every request must carry the key of OPENAI_API_KEY (or ANTHROPIC_API_KEY for the
Messages API): `Authorization: Bearer KEY` or `x-api-key: KEY`; any other gets a 401 in
its format's shape. Without a COMMAND it prints its base URL and serves until
interrupted. What `killpoint record` is tried against where no real provider (no key, no
network) is at hand: CI, the documentation's examples, killpoint's own tests.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import subprocess
import sys
import tempfile
import threading
from collections.abc import Sequence

import httpx

from .catalog import BUILTINS, UnknownScenario, get
from .model import ScriptedModel, format_for
from .model_server import ModelServer
from .sse import Chunks
from .wire import MESSAGES, openai_error

KEYS = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}


class KeyChecked:
    """The scripted model behind a provider's key check."""

    def __init__(self, model: ScriptedModel, keys: dict[str, str]) -> None:
        self.model = model
        self.keys = keys  # provider -> the key it accepts

    def handle(self, request: httpx.Request, *, via: str = "local") -> httpx.Response:
        wire = format_for(request.method, request.url.path)
        provider = "anthropic" if wire is not None and wire.name == MESSAGES else "openai"
        key = self.keys.get(provider) or ""
        given = request.headers.get("x-api-key") or request.headers.get(
            "authorization", ""
        ).removeprefix("Bearer ")
        if not key or given != key:
            message = (
                f"stand-in provider: this request carries no valid API key; set "
                f"{KEYS[provider]} to the stand-in's key"
            )
            return wire.error(401, message) if wire is not None else openai_error(401, message)
        return as_sent(self.model.handle(request, via=via))


def as_sent(response: httpx.Response) -> httpx.Response:
    """The scripted model's response in a provider's own bytes: a JSON body indented (as
    OpenAI's API sends it), a stream opened by a comment line (as providers' keep-alives
    are). The same reply to a client; other bytes than the scripted model renders, so a
    replay that served anything but the recorded bytes would show."""
    stream = response.stream
    headers = {k: v for k, v in response.headers.items() if k.lower() != "content-length"}
    if isinstance(stream, Chunks):
        chunks = [b": killpoint stand-in provider\n\n", *stream.chunks]
        return httpx.Response(response.status_code, headers=headers, stream=Chunks(chunks))
    try:
        body = json.loads(response.content)
    except ValueError:
        return response
    text = json.dumps(body, indent=2, ensure_ascii=False).encode()
    return httpx.Response(response.status_code, headers=headers, content=text)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m killpoint.scenarios.stand_in",
        description="A built-in scenario's scripted model at a local address, behind an API "
        "key check: a stand-in for a real provider.",
    )
    parser.add_argument("scenario", help=f"a built-in scenario: {', '.join(BUILTINS)}")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- COMMAND to run against it")
    args = parser.parse_args(argv)
    try:
        scenario = get(args.scenario)
    except UnknownScenario as exc:
        parser.exit(2, f"{exc}\n")
    keys = {provider: os.environ.get(name, "") for provider, name in KEYS.items()}
    if not any(keys.values()):
        parser.exit(
            2,
            "stand-in provider: set OPENAI_API_KEY (or ANTHROPIC_API_KEY) to the key it should "
            "accept, as a real provider's\n",
        )
    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    with tempfile.TemporaryDirectory(prefix="killpoint-stand-in-") as state:
        model = ScriptedModel(scenario.script, state)
        with ModelServer(KeyChecked(model, keys)) as server:
            if not command:
                print(f"stand-in provider for {scenario.name!r} at {server.url}", flush=True)
                stop = threading.Event()
                signal.signal(signal.SIGTERM, lambda *_: stop.set())
                with contextlib.suppress(KeyboardInterrupt):
                    stop.wait()
                return 0
            env = {
                **os.environ,
                "OPENAI_BASE_URL": f"{server.url}/v1",
                "ANTHROPIC_BASE_URL": server.url,
            }
            try:
                return subprocess.run(command, env=env, check=False).returncode
            except FileNotFoundError:
                print(f"stand-in provider: no command {command[0]!r}", file=sys.stderr)
                return 127


if __name__ == "__main__":
    sys.exit(main())
