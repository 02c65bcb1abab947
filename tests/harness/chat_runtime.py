"""chatagent: jsonagent (tests/harness/json_file_runtime.py, its store written atomically)
with a model client that is not the openai SDK's Responses API, one adapter per client.
Every adapter asks for the scripted model at a local address (`local_model = True`) and
finds it through the environment, as a runtime built for a real provider would:

- `adapter`: Chat Completions with plain httpx (a client killpoint's HTTP mock does not
  patch: it can only be served at the local address);
- `openai_stream`: Chat Completions streamed through the openai SDK (`stream=True`, usage
  asked for);
- `litellm_stream` / `litellm_whole`: LiteLLM's `acompletion`, streamed or not;
- `anthropic_whole` / `anthropic_stream`: the anthropic SDK's Messages API;
- `responses_stream`: the openai SDK's Responses API, streamed;
- `not_local` (broken): the plain httpx client without asking for the local address;
- `hanging` (broken): lists the models (a request the scripted model does not serve),
  then waits for ever.

`--runtime tests.harness.chat_runtime:adapter` (and the others).
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import httpx

from killpoint import Ledger, Scenario, ToolEnv
from killpoint.stores.sqlite import path_of
from tests.harness.json_file_runtime import Agent, JsonAdapter, JsonDriver, JsonStore, ModelFailed

# LiteLLM fetches its model price map from the network on import unless told not to.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
MODEL = "gpt-4.1-mini"
RETRYABLE = (429, 500, 502, 503, 529)


def chat_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's messages in Chat Completions' shape."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == "tool":
            out.append({"role": "tool", "tool_call_id": m["call_id"], "content": m["content"]})
        elif m["role"] == "assistant":
            message: dict[str, Any] = {"role": "assistant", "content": m["content"]}
            if m["tool_calls"]:
                message["tool_calls"] = [
                    {
                        "id": c["call_id"],
                        "type": "function",
                        "function": {"name": c["name"], "arguments": c["arguments"]},
                    }
                    for c in m["tool_calls"]
                ]
            out.append(message)
        else:
            out.append({"role": m["role"], "content": m["content"]})
    return out


def anthropic_messages(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The run's messages in the Messages API's shape: tool results in one user message."""
    out: list[dict[str, Any]] = []
    for m in messages:
        if m["role"] == "tool":
            block = {"type": "tool_result", "tool_use_id": m["call_id"], "content": m["content"]}
            if out and out[-1]["role"] == "user" and isinstance(out[-1]["content"], list):
                out[-1]["content"].append(block)
            else:
                out.append({"role": "user", "content": [block]})
        elif m["role"] == "assistant":
            blocks: list[dict[str, Any]] = []
            if m["content"]:
                blocks.append({"type": "text", "text": m["content"]})
            blocks += [
                {
                    "type": "tool_use",
                    "id": c["call_id"],
                    "name": c["name"],
                    "input": json.loads(c["arguments"]),
                }
                for c in m["tool_calls"]
            ]
            out.append({"role": "assistant", "content": blocks})
        else:
            out.append({"role": "user", "content": m["content"]})
    return out


def _chat_reply(message: dict[str, Any]) -> tuple[str | None, list[dict[str, Any]]]:
    return message.get("content") or None, [
        {
            "call_id": c["id"],
            "name": c["function"]["name"],
            "arguments": c["function"]["arguments"],
        }
        for c in message.get("tool_calls") or ()
    ]


class ChatAgent(Agent):
    def __init__(
        self, store: JsonStore, tools: list[Any], mode: str, retries: int, client: str
    ) -> None:
        super().__init__(store, tools, mode, retries)
        self.retries = retries
        self.kind = client

    async def ask(self, messages: list[dict[str, Any]]) -> tuple[str | None, list[dict[str, Any]]]:
        return await getattr(self, "_" + self.kind.replace("-", "_"))(messages)

    async def _httpx(self, messages: list[dict[str, Any]]) -> tuple[str | None, list[Any]]:
        """Plain httpx at OPENAI_BASE_URL, retrying what a provider says to retry."""
        body = {"model": MODEL, "messages": chat_messages(messages)}
        url = f"{os.environ['OPENAI_BASE_URL']}/chat/completions"
        headers = {"authorization": f"Bearer {os.environ['OPENAI_API_KEY']}"}
        async with httpx.AsyncClient(timeout=30) as client:
            attempts = 0
            while attempts <= self.retries:
                attempts += 1
                try:
                    response = await client.post(url, json=body, headers=headers)
                except httpx.TransportError as exc:
                    failure = f"{type(exc).__name__}: {exc}"
                    continue
                if response.status_code == 200:
                    return _chat_reply(response.json()["choices"][0]["message"])
                failure = f"{response.status_code}: {response.text[:200]}"
                if response.status_code not in RETRYABLE:
                    break
            raise ModelFailed(f"after {attempts} attempt(s): {failure}")

    async def _hang(self, messages: list[dict[str, Any]]) -> tuple[str | None, list[Any]]:
        async with httpx.AsyncClient(timeout=30) as client:
            await client.get(f"{os.environ['OPENAI_BASE_URL']}/models")
        await asyncio.Event().wait()  # a client stuck on what it did not expect
        raise AssertionError("unreachable")

    async def _openai_stream(self, messages: list[dict[str, Any]]) -> tuple[str | None, list[Any]]:
        import openai

        client = openai.AsyncOpenAI(max_retries=self.retries)
        stream = await client.chat.completions.create(
            model=MODEL,
            messages=chat_messages(messages),  # type: ignore[arg-type]
            stream=True,
            stream_options={"include_usage": True},
        )
        return await _gather_chat_stream(stream)

    async def _litellm_stream(self, messages: list[dict[str, Any]]) -> tuple[str | None, list[Any]]:
        return await self._litellm(messages, stream=True)

    async def _litellm_whole(self, messages: list[dict[str, Any]]) -> tuple[str | None, list[Any]]:
        return await self._litellm(messages, stream=False)

    async def _litellm(
        self, messages: list[dict[str, Any]], *, stream: bool
    ) -> tuple[str | None, list[Any]]:
        import litellm

        # LiteLLM's errors are the openai SDK's error classes: the loop catches them.
        response = await litellm.acompletion(
            model=f"openai/{MODEL}",
            messages=chat_messages(messages),
            stream=stream,
            max_retries=self.retries,
        )
        if not stream:
            return _chat_reply(response.choices[0].message.model_dump())
        return await _gather_chat_stream(response)

    async def _anthropic_whole(
        self, messages: list[dict[str, Any]]
    ) -> tuple[str | None, list[Any]]:
        import anthropic

        client = anthropic.AsyncAnthropic(max_retries=self.retries)
        try:
            message = await client.messages.create(
                model="claude-test",
                max_tokens=1024,
                messages=anthropic_messages(messages),  # type: ignore[arg-type]
            )
        except anthropic.APIError as exc:
            raise ModelFailed(str(exc)) from exc
        return _anthropic_reply([b.model_dump() for b in message.content])

    async def _anthropic_stream(
        self, messages: list[dict[str, Any]]
    ) -> tuple[str | None, list[Any]]:
        import anthropic

        client = anthropic.AsyncAnthropic(max_retries=self.retries)
        try:
            async with client.messages.stream(
                model="claude-test",
                max_tokens=1024,
                messages=anthropic_messages(messages),  # type: ignore[arg-type]
            ) as stream:
                message = await stream.get_final_message()
        except anthropic.APIError as exc:
            raise ModelFailed(str(exc)) from exc
        return _anthropic_reply([b.model_dump() for b in message.content])

    async def _responses_stream(
        self, messages: list[dict[str, Any]]
    ) -> tuple[str | None, list[Any]]:
        import openai

        from tests.harness.json_file_runtime import _as_input

        client = openai.AsyncOpenAI(max_retries=self.retries)
        stream = await client.responses.create(model=MODEL, input=_as_input(messages), stream=True)
        final = None
        async for event in stream:
            if event.type == "response.completed":
                final = event.response
        if final is None:
            raise ModelFailed("the stream ended without response.completed")
        calls = [i for i in final.output if i.type == "function_call"]
        return final.output_text or None, [
            {"call_id": c.call_id, "name": c.name, "arguments": c.arguments} for c in calls
        ]


def _anthropic_reply(blocks: list[dict[str, Any]]) -> tuple[str | None, list[Any]]:
    text = "".join(b["text"] for b in blocks if b["type"] == "text")
    return text or None, [
        {"call_id": b["id"], "name": b["name"], "arguments": json.dumps(b["input"])}
        for b in blocks
        if b["type"] == "tool_use"
    ]


async def _gather_chat_stream(stream: Any) -> tuple[str | None, list[Any]]:
    """A streamed completion put together from its deltas, as a client does."""
    text: list[str] = []
    calls: dict[int, dict[str, Any]] = {}
    finished = None
    async for chunk in stream:
        for choice in chunk.choices:
            delta = choice.delta
            if delta.content:
                text.append(delta.content)
            for call in delta.tool_calls or ():
                slot = calls.setdefault(call.index, {"call_id": "", "name": "", "arguments": ""})
                if call.id:
                    slot["call_id"] = call.id
                if call.function is not None:
                    slot["name"] += call.function.name or ""
                    slot["arguments"] += call.function.arguments or ""
            finished = choice.finish_reason or finished
    if finished is None:
        raise ModelFailed("the stream ended without a finish reason")
    return "".join(text) or None, [calls[i] for i in sorted(calls)]


class ChatAdapter(JsonAdapter):
    name = "chatagent"
    how = "atomic"
    client = "httpx"
    local_model = True
    preload_modules = ("openai", "httpx")

    def driver(
        self, scenario: Scenario, store_url: str, mode: str, ledger: Ledger, *, lease_seconds: float
    ) -> JsonDriver:
        store = JsonStore(Path(path_of(store_url)).parent, self.gates, self.how)
        store.create()
        tools = scenario.build_tools(ToolEnv(ledger))
        return JsonDriver(ChatAgent(store, tools, mode, scenario.max_retries, self.client))


def _variant(client: str, *preload: str) -> ChatAdapter:
    made = type(f"Chat_{client}", (ChatAdapter,), {"client": client})()
    made.name = f"chatagent-{client}"
    made.preload_modules = ("openai", "httpx", *preload)
    return made


adapter = ChatAdapter()
openai_stream = _variant("openai-stream")
litellm_stream = _variant("litellm-stream", "litellm")
litellm_whole = _variant("litellm-whole", "litellm")
anthropic_whole = _variant("anthropic-whole", "anthropic")
anthropic_stream = _variant("anthropic-stream", "anthropic")
responses_stream = _variant("responses-stream")
hanging = _variant("hang")
not_local = _variant("httpx")
not_local.local_model = False
