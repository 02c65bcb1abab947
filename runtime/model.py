"""The model: OpenAI's Responses API through the official SDK's async client."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .messages import Message, ToolCall, Usage


class ModelError(Exception):
    """The model call failed (HTTP error, timeout, dropped connection, unreadable reply)."""


@dataclass(frozen=True)
class ModelReply:
    message: Message
    usage: Usage


def to_input_items(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Translate the conversation into Responses API input items."""
    items: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "user":
            items.append({"role": "user", "content": m.content or ""})
        elif m.role == "assistant":
            if m.content:
                items.append({"role": "assistant", "content": m.content})
            for c in m.tool_calls:
                items.append(
                    {
                        "type": "function_call",
                        "call_id": c.call_id,
                        "name": c.name,
                        "arguments": c.arguments,
                    }
                )
        else:
            items.append(
                {"type": "function_call_output", "call_id": m.call_id, "output": m.content or ""}
            )
    return items


def chain_point(messages: Sequence[Message]) -> tuple[str | None, Sequence[Message]]:
    """The newest model response in the conversation and the messages after it.

    The provider already holds everything up to that response (it produced it from
    exactly that prefix), so a chained request needs only what came after."""
    for n in range(len(messages) - 1, -1, -1):
        m = messages[n]
        if m.role == "assistant" and m.response_id:
            return m.response_id, messages[n + 1 :]
    return None, messages


class OpenAIResponses:
    """`responses.create` over `openai.AsyncOpenAI`; nothing here knows about fakes.

    The client is built lazily, inside the running event loop of the process that
    uses it, so an agent built before a fork works in the child.

    `chain=True` sends only what the model has not seen, chained to its previous
    response with `previous_response_id` (the provider keeps responses); each request
    then costs the same however long the run is. The stored transcript stays the
    source of truth: after a crash the chain resumes from the last checkpointed
    response, and a provider that no longer has it gets the whole transcript instead.
    `chain=False` (the default) resends the whole transcript every turn.
    """

    def __init__(
        self,
        id: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        max_retries: int = 2,
        timeout: float = 60.0,
        client: Any = None,
        chain: bool = False,
    ) -> None:
        self.id = id
        self.chain = chain
        self._api_key = api_key
        self._base_url = base_url
        self.max_retries = max_retries
        self.timeout = timeout
        self._client = client

    def __repr__(self) -> str:  # never shows the API key
        return f"OpenAIResponses(id={self.id!r})"

    def _get_client(self) -> Any:
        if self._client is None:
            import openai

            self._client = openai.AsyncOpenAI(
                api_key=self._api_key,
                base_url=self._base_url,
                max_retries=self.max_retries,
                timeout=self.timeout,
            )
        return self._client

    async def respond(
        self,
        messages: Sequence[Message],
        *,
        instructions: str | None,
        tools: Sequence[dict[str, Any]],
    ) -> ModelReply:
        import openai

        kwargs: dict[str, Any] = {"model": self.id}
        if instructions:
            kwargs["instructions"] = instructions
        if tools:
            kwargs["tools"] = list(tools)
        previous, new = chain_point(messages) if self.chain else (None, messages)
        try:
            try:
                response = await self._create(kwargs, previous, new)
            except (openai.BadRequestError, openai.NotFoundError) as exc:
                if previous is None or getattr(exc, "param", None) != "previous_response_id":
                    raise
                # The provider no longer holds the response: send the whole transcript.
                response = await self._create(kwargs, None, messages)
        except (openai.OpenAIError, UnicodeError) as exc:
            # UnicodeError: the SDK cannot encode the request (a tool returned a lone
            # surrogate); the call failed like any other, and the run must end ERROR.
            raise ModelError(f"{type(exc).__name__}: {exc}") from exc
        return parse_response(response)

    async def _create(
        self, kwargs: dict[str, Any], previous: str | None, messages: Sequence[Message]
    ) -> Any:
        chained = {"previous_response_id": previous} if previous else {}
        return await self._get_client().responses.create(
            **kwargs, **chained, input=to_input_items(messages)
        )


def parse_response(response: Any) -> ModelReply:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for item in response.output or ():
        if item.type == "function_call":
            calls.append(ToolCall(call_id=item.call_id, name=item.name, arguments=item.arguments))
        elif item.type == "message":
            texts.extend(part.text for part in item.content if part.type == "output_text")
    u = response.usage
    usage = Usage(
        input_tokens=getattr(u, "input_tokens", 0) or 0,
        output_tokens=getattr(u, "output_tokens", 0) or 0,
        total_tokens=getattr(u, "total_tokens", 0) or 0,
        model_calls=1,
    )
    message = Message(
        role="assistant",
        content="".join(texts) if texts else None,
        tool_calls=tuple(calls),
        response_id=response.id,
    )
    return ModelReply(message=message, usage=usage)
