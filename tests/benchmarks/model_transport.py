"""What a model request costs through the scripted model's two transports: the HTTP mock
in the worker (the openai SDK's own transport, patched) and the local address (a real
socket on 127.0.0.1, for clients that are not the openai SDK).

    python -m tests.benchmarks.model_transport [--requests 300]

Each case asks turn 2 of `research` (a conversation of three items, a reply of one call)
`--requests` times in one process, after a warm-up, and prints the median wall time of a
request and the CPU (this process's, the server's threads included) per request:

- the model alone: `ScriptedModel.handle` called with the request (no client, no HTTP);
- mock, openai SDK: `chat.completions.create` in the worker, no socket;
- local, openai SDK: the same client pointed at the local address (no mock installed);
- local, httpx: a plain httpx client on a keep-alive connection;
- the same three streamed (`stream=True`, every chunk read).
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai

from killpoint.scenarios import ScriptedModel
from killpoint.scenarios.builtin import research
from killpoint.scenarios.model_server import ModelServer

WARM_UP = 20


def _messages(model: ScriptedModel) -> list[dict[str, Any]]:
    """Turn 2's history: the user's request, the first call and its result."""
    with model:
        first = openai.OpenAI(api_key="k", max_retries=0).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "Find it."}]
        )
    message = first.choices[0].message
    call = (message.tool_calls or [])[0]
    return [
        {"role": "user", "content": "Find it."},
        message.model_dump(exclude_none=True),
        {"role": "tool", "tool_call_id": call.id, "content": "r1 r2 r3"},
    ]


def measure(ask: Callable[[], object], n: int) -> tuple[float, float]:
    """(median wall ms, CPU ms per request) over `n` requests."""
    for _ in range(WARM_UP):
        ask()
    walls = []
    cpu = time.process_time()
    for _ in range(n):
        start = time.perf_counter()
        ask()
        walls.append(time.perf_counter() - start)
    cpu = time.process_time() - cpu
    return statistics.median(walls) * 1000, cpu / n * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="killpoint-bench-transport-") as state:
        rows = _cases(ScriptedModel(research.script, Path(state)), args.requests)
    print(f"requests per case: {args.requests}")
    width = max(len(r[0]) for r in rows)
    for name, wall, cpu in rows:
        print(f"{name + ':':<{width + 1}}  median {wall:6.2f} ms   cpu {cpu:6.2f} ms/request")
    return 0


def _cases(model: ScriptedModel, requests: int) -> list[tuple[str, float, float]]:
    """Each way of asking the model, measured: (name, median wall ms, CPU ms a request)."""
    messages = _messages(model)
    body = {"model": "m", "messages": messages}
    rows: list[tuple[str, float, float]] = []
    request = httpx.Request("POST", "http://127.0.0.1/v1/chat/completions", json=body)
    rows.append(("the model alone", *measure(lambda: model.handle(request).read(), requests)))
    for stream in (False, True):
        label = " streamed" if stream else ""
        sdk = openai.OpenAI(api_key="k", max_retries=0)

        def sdk_ask(client: openai.OpenAI = sdk, stream: bool = stream) -> object:
            reply = client.chat.completions.create(model="m", messages=messages, stream=stream)  # type: ignore[call-overload]
            return list(reply) if stream else reply

        with model:
            rows.append((f"mock, openai SDK{label}", *measure(sdk_ask, requests)))
        with ModelServer(model) as server:
            local_sdk = openai.OpenAI(api_key="k", max_retries=0, base_url=f"{server.url}/v1")
            rows.append(
                (
                    f"local, openai SDK{label}",
                    *measure(lambda c=local_sdk, s=stream: sdk_ask(c, s), requests),
                )
            )
            with httpx.Client(base_url=server.url) as plain:

                def plain_ask(client: httpx.Client = plain, stream: bool = stream) -> object:
                    if not stream:
                        return client.post("/v1/chat/completions", json=body).json()
                    with client.stream(
                        "POST", "/v1/chat/completions", json={**body, "stream": True}
                    ) as response:
                        return list(response.iter_lines())

                rows.append((f"local, httpx{label}", *measure(plain_ask, requests)))
    return rows


if __name__ == "__main__":
    raise SystemExit(main())
