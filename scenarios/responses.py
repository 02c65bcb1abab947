"""Responses API bodies for a scripted reply, with every id derived from the conversation."""

from __future__ import annotations

import hashlib
import json
from typing import Any

from .behaviours import Regenerated
from .conversation import Conversation
from .script import Reply


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


def response_body(
    conversation: Conversation,
    reply: Reply,
    *,
    model: str,
    request_size: int,
    regenerated: Regenerated | None = None,
) -> dict[str, Any]:
    output = output_items(conversation, reply, regenerated)
    # Token counts are a deterministic function of sizes, like a tokenizer would be.
    input_tokens = max(1, request_size // 4)
    output_tokens = max(1, len(json.dumps(output)) // 4)
    return {
        "id": response_id(conversation, regenerated.salt if regenerated else None),
        "object": "response",
        "created_at": 1_700_000_000,
        "model": model,
        "status": "completed",
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "total_tokens": input_tokens + output_tokens,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens_details": {"reasoning_tokens": 0},
        },
    }
