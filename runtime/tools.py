"""Tools: plain Python callables described to the model by their signature and docstring."""

from __future__ import annotations

import asyncio
import inspect
import json
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .errors import ConfigurationError

# Parameters the runtime fills in itself; the model never sees them.
IDEMPOTENCY_KEY = "idempotency_key"
SESSION_STATE = "session_state"
RUN_ID = "run_id"
INJECTED = frozenset({IDEMPOTENCY_KEY, SESSION_STATE, RUN_ID})

_JSON_TYPES: dict[Any, str] = {
    str: "string",
    int: "integer",
    float: "number",
    bool: "boolean",
    list: "array",
    tuple: "array",
    dict: "object",
}


def _json_type(annotation: Any) -> dict[str, Any]:
    if annotation is inspect.Parameter.empty or annotation is Any:
        return {}
    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(annotation) if a is not type(None)]
        return _json_type(inner[0]) if len(inner) == 1 else {}
    if origin is typing.Literal:
        return {"enum": list(typing.get_args(annotation))}
    base = origin or annotation
    if base in _JSON_TYPES:
        schema: dict[str, Any] = {"type": _JSON_TYPES[base]}
        args = typing.get_args(annotation)
        if base in (list, tuple) and args:
            schema["items"] = _json_type(args[0])
        return schema
    return {}


def _description(fn: Callable[..., Any]) -> str:
    doc = inspect.getdoc(fn) or ""
    return doc.split("\n\n", 1)[0].replace("\n", " ").strip()


@dataclass(frozen=True)
class Tool:
    """A callable the model may call. Build with `Tool.from_function` or the `tool` decorator."""

    fn: Callable[..., Any]
    name: str
    description: str
    parameters: dict[str, Any]
    requires_confirmation: bool = False
    injected: frozenset[str] = field(default_factory=frozenset)

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        requires_confirmation: bool = False,
    ) -> Tool:
        if not callable(fn):
            raise ConfigurationError(f"runtime: a tool must be callable, got {fn!r}")
        try:
            hints = typing.get_type_hints(fn)
        except Exception:
            hints = {}
        properties: dict[str, Any] = {}
        required: list[str] = []
        injected: set[str] = set()
        for pname, param in inspect.signature(fn).parameters.items():
            if pname in INJECTED:
                injected.add(pname)
                continue
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                continue
            properties[pname] = _json_type(hints.get(pname, param.annotation))
            if param.default is inspect.Parameter.empty:
                required.append(pname)
        schema = {"type": "object", "properties": properties, "required": required}
        return cls(
            fn=fn,
            name=name or fn.__name__,
            description=_description(fn),
            parameters=schema,
            requires_confirmation=requires_confirmation,
            injected=frozenset(injected),
        )

    def schema(self) -> dict[str, Any]:
        """The flat Responses API function tool."""
        return {
            "type": "function",
            "name": self.name,
            "description": self.description,
            "parameters": self.parameters,
        }

    async def invoke(self, arguments: str, context: dict[str, Any]) -> str:
        """Run the tool; returns its result as text. Exceptions propagate to the caller."""
        kwargs = json.loads(arguments) if arguments.strip() else {}
        if not isinstance(kwargs, dict):
            raise TypeError(f"arguments must be a JSON object, got {arguments!r}")
        kwargs.update({k: context[k] for k in self.injected})
        if inspect.iscoroutinefunction(self.fn):
            result = await self.fn(**kwargs)
        else:
            # A thread keeps a batch concurrent even when its tools block.
            result = await asyncio.to_thread(self.fn, **kwargs)
        return result if isinstance(result, str) else json.dumps(result, ensure_ascii=False)


def tool(
    fn: Callable[..., Any] | None = None,
    *,
    name: str | None = None,
    requires_confirmation: bool = False,
) -> Any:
    """Decorator form: `@tool` or `@tool(requires_confirmation=True)`."""

    def wrap(f: Callable[..., Any]) -> Tool:
        return Tool.from_function(f, name=name, requires_confirmation=requires_confirmation)

    return wrap(fn) if fn is not None else wrap


def as_tool(obj: Tool | Callable[..., Any]) -> Tool:
    return obj if isinstance(obj, Tool) else Tool.from_function(obj)
