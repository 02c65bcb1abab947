"""The OpenAI Responses API (`POST /v1/responses`): bodies for a scripted reply, every id
derived from the conversation, whole or as its stream of events."""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Callable
from typing import Any

import httpx

from . import sse
from .behaviours import Regenerated
from .conversation import Conversation
from .script import Reply
from .wire import RESPONSES, Answer, Parsed, RequestError, openai_error, pieces


def _id(prefix: str, seed: str, *parts: object) -> str:
    h = hashlib.sha256("/".join([seed, *map(str, parts)]).encode()).hexdigest()[:24]
    return f"{prefix}_{h}"


def response_id(conversation: Conversation, salt: str | None = None) -> str:
    """The response's id; with a `salt`, a regenerated reply's fresh one."""
    return _id("resp", conversation.digest(), *([salt] if salt else []))


def output_items(
    conversation: Conversation, reply: Reply, regenerated: Regenerated | None = None
) -> list[dict[str, Any]]:
    """The reply's output items. Ids come from the conversation, so the same turn asked
    again gets the same ids, unless `regenerated` says otherwise (fresh ids from its salt,
    each call keeping the id of its place in the script's order, its argument text)."""
    seed = conversation.digest()
    salt = regenerated.salt if regenerated is not None else None
    if salt:
        seed = f"{seed}/{salt}"
    items: list[dict[str, Any]] = []
    if reply.text is not None:
        items.append(
            {
                "type": "message",
                "id": _id("msg", seed),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": reply.text, "annotations": []}],
            }
        )
    for position, call in enumerate(reply.calls):
        index = regenerated.order[position] if regenerated is not None else position
        texts = regenerated.arguments if regenerated is not None else None
        items.append(
            {
                "type": "function_call",
                "id": _id("fc", seed, index),
                "call_id": _id("call", seed, index),
                "name": call.name,
                "arguments": texts[position]
                if texts is not None
                else json.dumps(call.arguments, sort_keys=True, ensure_ascii=True),
                "status": "completed",
            }
        )
    return items


def answer_for(
    conversation: Conversation,
    reply: Reply,
    *,
    model: str,
    request_size: int,
    regenerated: Regenerated | None = None,
) -> Answer:
    """The reply in the form every wire format renders: output items and token counts."""
    output = output_items(conversation, reply, regenerated)
    # Token counts are a deterministic function of sizes, like a tokenizer would be; the
    # same in every format, so a run's usage does not depend on the API it speaks.
    return Answer(
        id=response_id(conversation, regenerated.salt if regenerated else None),
        model=model,
        output=output,
        input_tokens=max(1, request_size // 4),
        output_tokens=max(1, len(json.dumps(output)) // 4),
    )


def response_body(
    conversation: Conversation,
    reply: Reply,
    *,
    model: str,
    request_size: int,
    regenerated: Regenerated | None = None,
) -> dict[str, Any]:
    return body_of(
        answer_for(
            conversation, reply, model=model, request_size=request_size, regenerated=regenerated
        )
    )


def body_of(answer: Answer, status: str = "completed") -> dict[str, Any]:
    """The Responses API body of an answer (`status` in_progress: as a stream begins it,
    with no output yet)."""
    done = status == "completed"
    return {
        "id": answer.id,
        "object": "response",
        "created_at": 1_700_000_000,
        "model": answer.model,
        "status": status,
        "output": answer.output if done else [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": answer.input_tokens,
            "output_tokens": answer.output_tokens,
            "total_tokens": answer.input_tokens + answer.output_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        }
        if done
        else None,
    }


def stream_events(answer: Answer) -> list[bytes]:
    """The answer as the Responses API streams it: created, in_progress, each output item
    added / its deltas / done, then completed (no `[DONE]` line in this API)."""
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": body_of(answer, "in_progress")},
        {"type": "response.in_progress", "response": body_of(answer, "in_progress")},
    ]
    for index, item in enumerate(answer.output):
        opened = copy.deepcopy(item)
        opened["status"] = "in_progress"
        where = {"item_id": item["id"], "output_index": index}
        if item["type"] == "message":
            text = item["content"][0]["text"]
            opened["content"] = []
            part = {"type": "output_text", "text": "", "annotations": []}
            events += [
                {"type": "response.output_item.added", "output_index": index, "item": opened},
                {"type": "response.content_part.added", **where, "content_index": 0, "part": part},
                *(
                    {
                        "type": "response.output_text.delta",
                        **where,
                        "content_index": 0,
                        "delta": piece,
                        "logprobs": [],
                    }
                    for piece in pieces(text)
                ),
                {
                    "type": "response.output_text.done",
                    **where,
                    "content_index": 0,
                    "text": text,
                    "logprobs": [],
                },
                {
                    "type": "response.content_part.done",
                    **where,
                    "content_index": 0,
                    "part": item["content"][0],
                },
            ]
        else:
            opened["arguments"] = ""
            events += [
                {"type": "response.output_item.added", "output_index": index, "item": opened},
                *(
                    {"type": "response.function_call_arguments.delta", **where, "delta": piece}
                    for piece in pieces(item["arguments"])
                ),
                {
                    "type": "response.function_call_arguments.done",
                    **where,
                    "name": item["name"],
                    "arguments": item["arguments"],
                },
            ]
        events.append({"type": "response.output_item.done", "output_index": index, "item": item})
    events.append({"type": "response.completed", "response": body_of(answer)})
    return [sse.event({**e, "sequence_number": n}, e["type"]) for n, e in enumerate(events)]


class ResponsesFormat:
    """`POST …/responses`: the input items (a string is one user message), chained to a
    stored response by `previous_response_id`; `stream: true` answers with events."""

    name = RESPONSES
    label = "OpenAI Responses API"
    path = re.compile(r".*/responses$")

    def parse(self, body: dict[str, Any], load: Callable[[str], dict[str, Any] | None]) -> Parsed:
        raw = body.get("input", [])
        if isinstance(raw, str):
            raw = [{"role": "user", "content": raw}]
        previous = body.get("previous_response_id")
        if previous:
            stored = load(previous)
            if stored is None:
                raise RequestError(
                    f"previous_response_id {previous!r} is unknown", "previous_response_id"
                )
            raw = stored["input"] + stored["output"] + raw
        return Parsed(
            Conversation.from_input(raw),
            model=str(body.get("model", "")),
            stream=bool(body.get("stream")),
            items=raw,
        )

    def render(self, parsed: Parsed, answer: Answer, turn: int) -> httpx.Response:
        if parsed.stream:
            return sse.streamed(stream_events(answer), turn)
        return httpx.Response(200, json=body_of(answer))

    def error(self, status: int, message: str, param: str | None = None) -> httpx.Response:
        return openai_error(status, message, param)
