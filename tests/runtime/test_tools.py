# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Tools: flat function schemas from signatures and docstrings; injected parameters;
idempotency keys."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Literal

import pytest
import respx

from killpoint.runtime import Agent, ConfigurationError, RunStatus, Tool, idempotency_key, tool
from tests.helpers import error_response, function_call, make_model, message_item, serve


def test_schema_from_signature_and_docstring() -> None:
    """Types map to JSON schema, defaults make a parameter optional, the docstring's first
    paragraph is the description, and the schema is the flat Responses function tool."""

    def search(
        query: str,
        limit: int = 10,
        score: float | None = None,
        tags: list[str] | None = None,
        mode: Literal["fast", "deep"] = "fast",
        exact: bool = False,
        extra: Any = None,
    ) -> str:
        """Search the index
        for documents.

        Longer text that the model does not need.
        """
        return query

    assert {
        "type": "function",
        "name": "search",
        "description": "Search the index for documents.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer"},
                "score": {"type": "number"},
                "tags": {"type": "array", "items": {"type": "string"}},
                "mode": {"enum": ["fast", "deep"]},
                "exact": {"type": "boolean"},
                "extra": {},
            },
            "required": ["query"],
        },
    } == Tool.from_function(search).schema()


def test_injected_parameters_are_hidden_from_the_model() -> None:
    """idempotency_key, session_state and run_id are filled in by the runtime, never shown."""

    def pay(amount: int, idempotency_key: str, session_state: dict[str, Any], run_id: str) -> str:
        """Pay."""
        return "paid"

    t = Tool.from_function(pay)

    assert {
        "type": "object",
        "properties": {"amount": {"type": "integer"}},
        "required": ["amount"],
    } == (t.parameters)
    assert frozenset({"idempotency_key", "session_state", "run_id"}) == t.injected


def test_decorator_name_and_confirmation() -> None:
    """@tool(name=..., requires_confirmation=True) carries both; bare @tool works too."""

    @tool(name="rm", requires_confirmation=True)
    def remove(path: str) -> str:
        """Remove."""
        return path

    @tool
    def plain() -> str:
        """Plain."""
        return ""

    assert ("rm", True) == (remove.name, remove.requires_confirmation)
    assert ("plain", False) == (plain.name, plain.requires_confirmation)


def test_invoke_passes_arguments_and_context_and_serialises_results() -> None:
    """invoke() decodes the argument JSON, adds the injected values, runs sync and async
    functions, and turns non-string results into JSON text."""

    def sync_fn(a: int, run_id: str) -> dict[str, Any]:
        """Sync."""
        return {"a": a, "run": run_id, "text": "é"}

    async def async_fn(b: str) -> str:
        """Async."""
        return b.upper()

    context = {"idempotency_key": "k", "session_state": {}, "run_id": "r1"}

    assert '{"a": 5, "run": "r1", "text": "é"}' == asyncio.run(
        Tool.from_function(sync_fn).invoke('{"a": 5}', context)
    )
    assert "HI" == asyncio.run(Tool.from_function(async_fn).invoke('{"b": "hi"}', context))


def test_invoke_refuses_non_object_arguments() -> None:
    """Arguments that are not a JSON object are a TypeError (an error result in a run)."""

    def f(a: int) -> int:
        """F."""
        return a

    with pytest.raises(TypeError, match="JSON object"):
        asyncio.run(Tool.from_function(f).invoke("[1, 2]", {}))


def test_two_tools_with_one_name_are_refused(tmp_path: Path) -> None:
    """An agent cannot hold two tools of the same name."""

    def a() -> str:
        """A."""
        return "a"

    with pytest.raises(ConfigurationError, match="share a name"):
        Agent("x", make_model(), f"sqlite:///{tmp_path / 'x.db'}", tools=[a, tool(a)])


def test_non_callable_tool_is_refused() -> None:
    """A tool must be callable."""
    with pytest.raises(ConfigurationError, match="callable"):
        Tool.from_function(42)  # type: ignore[arg-type]


def test_idempotency_key_format() -> None:
    """The key is run_id:turn:call_index."""
    assert "r-1:3:2" == idempotency_key("r-1", 3, 2)


def test_tools_receive_run_id_turn_index_keys(
    openai_mock: respx.MockRouter, store_url: str
) -> None:
    """A tool that declares `idempotency_key` receives run_id:turn:index for every call,
    turns counted from 1, indexes in call order within the batch; the executions record it."""
    keys: list[tuple[str, str]] = []

    def charge(label: str, idempotency_key: str) -> str:
        """Charge once per key."""
        keys.append((label, idempotency_key))
        return f"charged {label}"

    serve(
        openai_mock,
        [
            [
                function_call("a", "charge", {"label": "a"}),
                function_call("b", "charge", {"label": "b"}),
            ],
            [function_call("c", "charge", {"label": "c"})],
            [message_item("charged three")],
        ],
    )
    agent = Agent("keys", make_model(), store_url, tools=[charge], checkpoint="tool-batch")

    out = agent.run("charge", run_id="run-keys")

    expected = [("a", "run-keys:1:0"), ("b", "run-keys:1:1"), ("c", "run-keys:2:0")]
    assert expected == sorted(keys)
    assert expected == [
        (json.loads(e.arguments)["label"], e.idempotency_key) for e in out.tool_executions
    ]


def test_keys_stay_in_sequence_across_an_error_and_continue(
    openai_mock: respx.MockRouter, store_url: str
) -> None:
    """After an ERROR and a continue, the next batch is numbered as an uninterrupted run
    would number it (turn 2), under the same run id."""
    keys: list[str] = []

    def mark(idempotency_key: str) -> str:
        """Mark."""
        keys.append(idempotency_key)
        return "marked"

    serve(
        openai_mock,
        [
            [function_call("m1", "mark", {})],
            error_response(503),
            [function_call("m2", "mark", {})],
            [message_item("done")],
        ],
    )
    agent = Agent("keys", make_model(), store_url, tools=[mark], checkpoint="runs")

    failed = agent.run("mark", session_id="s", run_id="run-err")
    out = agent.continue_run("run-err", "s")

    assert (RunStatus.ERROR, RunStatus.COMPLETED) == (failed.status, out.status)
    assert ["run-err:1:0", "run-err:2:0"] == keys
    assert ["run-err:1:0", "run-err:2:0"] == [e.idempotency_key for e in out.tool_executions]


def test_session_state_is_shared_and_persisted(
    openai_mock: respx.MockRouter, store_url: str
) -> None:
    """A tool that declares session_state gets the session's dict; changes are persisted
    with the run and seen by the next run of the session."""

    def remember(item: str, session_state: dict[str, Any]) -> str:
        """Remember an item."""
        session_state.setdefault("items", []).append(item)
        return ",".join(session_state["items"])

    serve(
        openai_mock,
        [
            [function_call("r1", "remember", {"item": "x"})],
            [message_item("ok")],
            [function_call("r2", "remember", {"item": "y"})],
            [message_item("ok")],
        ],
    )
    agent = Agent("state", make_model(), store_url, tools=[remember])

    agent.run("one", session_id="s-state")
    second = agent.run("two", session_id="s-state")

    assert "x,y" == second.tool_executions[0].result
    session = agent.db.read_session("s-state")
    assert session is not None
    assert {"items": ["x", "y"]} == session["state"]
