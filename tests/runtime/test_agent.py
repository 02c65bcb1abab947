# ruff: noqa: SIM300 - tests assert `expected == actual`
"""The agent loop against a mocked Responses API and a real store (SQLite and PostgreSQL)."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import respx

from killpoint.runtime import (
    Agent,
    ConfigurationError,
    Message,
    RunNotContinuable,
    RunStatus,
    Store,
    ToolCall,
    tool,
)
from tests.helpers import (
    error_response,
    function_call,
    make_model,
    message_item,
    project,
    serve,
    snapshot,
)

WAIT = 5.0  # seconds a concurrency probe waits before declaring the batch sequential


def make_agent(url: str, tools: list[Any], checkpoint: str = "runs") -> Agent:
    return Agent("tester", make_model(), url, tools=tools, checkpoint=checkpoint)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_sequential_batches_feed_each_result_to_the_next_turn(
    openai_mock: respx.MockRouter, store_url: str
) -> None:
    """Three turns: two single-call batches, then an answer. Each model request carries the
    previous batches' calls and results, and the run reads back whole from the store."""
    route, script = serve(
        openai_mock,
        [
            [function_call("c1", "add", {"a": 1, "b": 2})],
            [function_call("c2", "add", {"a": 3, "b": 4})],
            [message_item("3 and 7")],
        ],
    )
    agent = make_agent(store_url, [add])

    out = agent.run("add things", session_id="s1")

    assert RunStatus.COMPLETED == out.status
    assert "3 and 7" == out.content
    assert 3 == route.call_count
    assert [
        {"role": "user", "content": "add things"},
        {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a": 1, "b": 2}'},
        {"type": "function_call_output", "call_id": "c1", "output": "3"},
        {"type": "function_call", "call_id": "c2", "name": "add", "arguments": '{"a": 3, "b": 4}'},
        {"type": "function_call_output", "call_id": "c2", "output": "7"},
    ] == script.inputs[2]
    assert [("c1", "3", "ok", 1, 0), ("c2", "7", "ok", 2, 0)] == [
        (e.call_id, e.result, e.status, e.turn, e.call_index) for e in out.tool_executions
    ]
    assert (30, 15, 45, 3) == (
        out.usage.input_tokens,
        out.usage.output_tokens,
        out.usage.total_tokens,
        out.usage.model_calls,
    )
    stored = Store(store_url).read_run(out.run_id)
    assert stored is not None
    assert RunStatus.COMPLETED == stored.status
    assert out.messages == stored.messages
    assert out.tool_executions == stored.tool_executions
    assert len(out.messages) == stored.last_checkpoint_at_message_index


def _event_pair_tools(kind: str) -> list[Callable[..., Any]]:
    """Two tools that can only both succeed if they run at the same time: each signals its
    own event, then waits (with a timeout) for the other's."""
    if kind == "async":
        ping_ev, pong_ev = asyncio.Event(), asyncio.Event()

        async def ping() -> str:
            """Signal ping, wait for pong."""
            ping_ev.set()
            await asyncio.wait_for(pong_ev.wait(), WAIT)
            return "ping saw pong"

        async def pong() -> str:
            """Signal pong, wait for ping."""
            pong_ev.set()
            await asyncio.wait_for(ping_ev.wait(), WAIT)
            return "pong saw ping"

        return [ping, pong]

    ping_t, pong_t = threading.Event(), threading.Event()

    def ping_sync() -> str:
        """Signal ping, wait for pong (blocking, in a thread)."""
        ping_t.set()
        if not pong_t.wait(WAIT):
            raise TimeoutError("pong never ran alongside ping")
        return "ping saw pong"

    def pong_sync() -> str:
        """Signal pong, wait for ping (blocking, in a thread)."""
        pong_t.set()
        if not ping_t.wait(WAIT):
            raise TimeoutError("ping never ran alongside pong")
        return "pong saw ping"

    return [tool(ping_sync, name="ping"), tool(pong_sync, name="pong")]


@pytest.mark.parametrize("kind", ["async", "sync"])
def test_parallel_batch_runs_its_calls_concurrently(
    openai_mock: respx.MockRouter, tmp_path: Path, kind: str
) -> None:
    """The calls of one reply run at the same time: ping and pong each wait for the other,
    so a runtime that ran them one after the other would time out (error results)."""
    serve(
        openai_mock,
        [[function_call("p1", "ping", {}), function_call("p2", "pong", {})], [message_item("ok")]],
    )
    agent = make_agent(f"sqlite:///{tmp_path / 'store.db'}", _event_pair_tools(kind))

    out = agent.run("play")

    assert RunStatus.COMPLETED == out.status
    assert [("p1", "ping saw pong", "ok"), ("p2", "pong saw ping", "ok")] == [
        (e.call_id, e.result, e.status) for e in out.tool_executions
    ]
    # Results are appended in call order, whatever order they finished in.
    assert ["p1", "p2"] == [m.call_id for m in out.messages if m.role == "tool"]


def test_failing_tool_is_an_error_result_and_the_run_completes(
    openai_mock: respx.MockRouter, store_url: str
) -> None:
    """A tool that raises becomes an error result the model sees; its sibling still runs;
    the run goes on to COMPLETED."""

    def explode(reason: str) -> str:
        """Always fails."""
        raise ValueError(f"boom: {reason}")

    route, script = serve(
        openai_mock,
        [
            [
                function_call("bad", "explode", {"reason": "testing"}),
                function_call("good", "add", {"a": 2, "b": 2}),
            ],
            [message_item("one failed, one gave 4")],
        ],
    )
    agent = make_agent(store_url, [explode, add])

    out = agent.run("try")

    assert RunStatus.COMPLETED == out.status
    assert [("bad", "error", "error: ValueError: boom: testing"), ("good", "ok", "4")] == [
        (e.call_id, e.status, e.result) for e in out.tool_executions
    ]
    outputs = [i for i in script.inputs[1] if i.get("type") == "function_call_output"]
    assert [
        {
            "type": "function_call_output",
            "call_id": "bad",
            "output": "error: ValueError: boom: testing",
        },
        {"type": "function_call_output", "call_id": "good", "output": "4"},
    ] == outputs
    assert 2 == route.call_count


def test_unknown_tool_is_an_error_result(openai_mock: respx.MockRouter, tmp_path: Path) -> None:
    """A call to a tool the agent does not have is answered with an error naming the tools."""
    serve(openai_mock, [[function_call("x", "nope", {})], [message_item("sorry")]])
    agent = make_agent(f"sqlite:///{tmp_path / 'store.db'}", [add])

    out = agent.run("call something")

    assert RunStatus.COMPLETED == out.status
    assert [("error", "error: unknown tool 'nope'; tools: add")] == [
        (e.status, e.result) for e in out.tool_executions
    ]


@pytest.mark.parametrize("answer", [True, False], ids=["confirmed", "rejected"])
def test_pause_then_continue_with_the_answer(
    openai_mock: respx.MockRouter, store_url: str, answer: bool
) -> None:
    """A call that needs confirmation pauses the run (PAUSED persisted, with the pending call
    ids, the tool not run). Continuing with True runs it; False gives a rejected result.
    Either way the run completes in place, under the same run_id."""
    deleted: list[str] = []

    @tool(requires_confirmation=True)
    def delete_file(path: str) -> str:
        """Delete a file (asks the user first)."""
        deleted.append(path)
        return f"deleted {path}"

    route, script = serve(
        openai_mock,
        [
            [function_call("d1", "delete_file", {"path": "/tmp/x"})],
            [message_item("done" if answer else "kept it")],
        ],
    )
    agent = make_agent(store_url, [delete_file])

    paused = agent.run("clean up", session_id="s-pause")

    assert RunStatus.PAUSED == paused.status
    assert ["d1"] == paused.pending_confirmations
    assert [] == deleted
    stored = Store(store_url).read_run(paused.run_id)
    assert stored is not None
    assert (RunStatus.PAUSED, ["d1"]) == (stored.status, stored.pending_confirmations)
    assert 1 == route.call_count

    out = agent.continue_run(paused.run_id, "s-pause", confirmations={"d1": answer})

    assert RunStatus.COMPLETED == out.status
    assert paused.run_id == out.run_id
    expected_result = "deleted /tmp/x" if answer else "rejected: the user did not confirm this call"
    expected_status = "ok" if answer else "rejected"
    assert (["/tmp/x"] if answer else []) == deleted
    assert [("d1", expected_status, expected_result)] == [
        (e.call_id, e.status, e.result) for e in out.tool_executions
    ]
    assert {"type": "function_call_output", "call_id": "d1", "output": expected_result} == (
        script.inputs[1][-1]
    )
    final = Store(store_url).read_run(out.run_id)
    assert final is not None
    assert (RunStatus.COMPLETED, []) == (final.status, final.pending_confirmations)
    assert ["user", "assistant", "tool", "assistant"] == [m.role for m in final.messages]


def test_paused_run_needs_its_answers(openai_mock: respx.MockRouter, store_url: str) -> None:
    """Continuing a PAUSED run without an answer for each pending call is refused, naming the
    calls, and leaves the store as it was."""

    @tool(requires_confirmation=True)
    def launch(target: str) -> str:
        """Launch (needs confirmation)."""
        return target

    serve(openai_mock, [[function_call("l1", "launch", {"target": "moon"})]])
    agent = make_agent(store_url, [launch])
    paused = agent.run("go", session_id="s")
    before = snapshot(store_url)

    with pytest.raises(RunNotContinuable, match="l1"):
        agent.continue_run(paused.run_id, "s", confirmations={"other": True})

    assert before == snapshot(store_url)


@pytest.mark.parametrize("mode", ["runs", "tool-batch"])
def test_cancel_ends_cancelled_persisted_and_not_continuable(
    openai_mock: respx.MockRouter, store_url: str, mode: str
) -> None:
    """A cancel requested during a batch ends the run CANCELLED at the next step boundary
    (no further model call), persisted; continuing it is refused and changes nothing."""
    holder: dict[str, Agent] = {}

    def stop_me(run_id: str) -> str:
        """Ask for this run to be cancelled."""
        holder["agent"].cancel_run(run_id)
        return "cancel requested"

    route, _ = serve(openai_mock, [[function_call("s1", "stop_me", {})]])
    agent = make_agent(store_url, [stop_me], checkpoint=mode)
    holder["agent"] = agent

    out = agent.run("stop", session_id="s-cancel")

    assert RunStatus.CANCELLED == out.status
    assert 1 == route.call_count
    stored = Store(store_url).read_run(out.run_id)
    assert stored is not None
    assert RunStatus.CANCELLED == stored.status
    assert ["user", "assistant", "tool"] == [m.role for m in stored.messages]
    before = snapshot(store_url)

    with pytest.raises(RunNotContinuable, match="CANCELLED"):
        agent.continue_run(out.run_id, "s-cancel")

    assert before == snapshot(store_url)
    assert 1 == route.call_count


@pytest.mark.parametrize("mode", ["runs", "tool-batch", "tool"])
def test_model_500_is_error_then_continue_completes(
    openai_mock: respx.MockRouter, store_url: str, mode: str
) -> None:
    """A 500 on the second turn ends the run as ERROR (persisted, with the error); continuing
    it re-asks the model from the last checkpoint and completes under the same run_id,
    without re-running the first batch."""
    calls: list[int] = []

    def count(n: int) -> str:
        """Count."""
        calls.append(n)
        return str(n)

    route, script = serve(
        openai_mock,
        [
            [function_call("c1", "count", {"n": 1})],
            error_response(500, "the model fell over"),
            [message_item("counted")],
        ],
    )
    agent = make_agent(store_url, [count], checkpoint=mode)

    failed = agent.run("count", session_id="s-err")

    assert RunStatus.ERROR == failed.status
    assert failed.error is not None and "500" in failed.error
    stored = Store(store_url).read_run(failed.run_id)
    assert stored is not None
    assert RunStatus.ERROR == stored.status
    assert failed.error == stored.error
    assert ["user", "assistant", "tool"] == [m.role for m in stored.messages]

    out = agent.continue_run(failed.run_id, "s-err")

    assert RunStatus.COMPLETED == out.status
    assert failed.run_id == out.run_id
    assert [1] == calls
    assert 3 == route.call_count
    assert script.inputs[1] == script.inputs[2]
    final = Store(store_url).read_run(out.run_id)
    assert final is not None
    assert (RunStatus.COMPLETED, None) == (final.status, final.error)
    assert project(out.messages) == project(final.messages)
    assert ["user", "assistant", "tool", "assistant"] == [m.role for m in final.messages]


def test_session_history_feeds_the_next_run(openai_mock: respx.MockRouter, store_url: str) -> None:
    """A second run in the same session sees the first (COMPLETED) run's messages."""
    _, script = serve(openai_mock, [[message_item("hello alice")], [message_item("you are alice")]])
    agent = make_agent(store_url, [])

    agent.run("I am alice", session_id="s-hist")
    agent.run("who am I?", session_id="s-hist")

    assert [
        {"role": "user", "content": "I am alice"},
        {"role": "assistant", "content": "hello alice"},
        {"role": "user", "content": "who am I?"},
    ] == script.inputs[1]
    session = Store(store_url).read_session("s-hist")
    assert session is not None
    assert 2 == len(session["run_ids"])


def test_run_id_cannot_be_reused(openai_mock: respx.MockRouter, tmp_path: Path) -> None:
    """arun() with the id of an existing run is refused (continue it instead)."""
    serve(openai_mock, [[message_item("once")]])
    agent = make_agent(f"sqlite:///{tmp_path / 'store.db'}", [])
    agent.run("first", run_id="r-fixed")

    with pytest.raises(ConfigurationError, match="acontinue_run"):
        agent.run("again", run_id="r-fixed")


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"checkpoint": "sometimes"}, "not a mode"), ({"lease_seconds": 0}, "must be positive")],
)
def test_bad_agent_arguments_are_refused(
    tmp_path: Path, kwargs: dict[str, Any], match: str
) -> None:
    """A checkpoint mode that does not exist, or a non-positive lease, is a ConfigurationError."""
    with pytest.raises(ConfigurationError, match=match):
        Agent("a", make_model(), f"sqlite:///{tmp_path / 'x.db'}", **kwargs)


def test_get_run_reads_what_the_store_holds(openai_mock: respx.MockRouter, tmp_path: Path) -> None:
    """get_run() returns the stored run; None for an unknown id."""
    serve(openai_mock, [[function_call("c", "add", {"a": 1, "b": 1})], [message_item("2")]])
    agent = make_agent(f"sqlite:///{tmp_path / 'store.db'}", [add])
    out = agent.run("1+1")

    got = agent.get_run(out.run_id)

    assert got is not None
    assert (out.status, out.messages, out.content) == (got.status, got.messages, got.content)
    assert None is agent.get_run("no-such-run")


def test_arguments_reach_the_tool_as_sent(openai_mock: respx.MockRouter, tmp_path: Path) -> None:
    """The model's argument JSON is passed to the tool and kept verbatim in the messages."""
    seen: list[dict[str, Any]] = []

    def record(text: str, count: int, flags: list[str]) -> str:
        """Record the arguments."""
        seen.append({"text": text, "count": count, "flags": flags})
        return "ok"

    raw = json.dumps({"text": 'héllo "q"', "count": 3, "flags": ["a", "b"]}, ensure_ascii=False)
    serve(openai_mock, [[function_call("r", "record", raw)], [message_item("done")]])
    agent = make_agent(f"sqlite:///{tmp_path / 'store.db'}", [record])

    out = agent.run("record")

    assert [{"text": 'héllo "q"', "count": 3, "flags": ["a", "b"]}] == seen
    assert (ToolCall("r", "record", raw),) == out.messages[1].tool_calls
    assert Message(role="user", content="record") == out.messages[0]
