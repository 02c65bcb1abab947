# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Hostile content round-trips through the store unchanged, on SQLite and PostgreSQL."""

from __future__ import annotations

import time

import pytest
import respx

from killpoint.runtime import Agent, Message, RunStatus, Store, ToolCall, ToolExecution, Usage
from killpoint.runtime.store import Checkpoint, Owner
from tests.helpers import function_call, make_model, message_item, serve

NUL = "before\x00after\x00"
SURROGATES = "lone \ud800 high, lone \udfff low, reversed \udc00\ud83d, escaped \udc80"
MEGABYTE = ("é漢🙂x" * 262_144)[:1_048_576]  # 1 Mi characters, multi-byte in UTF-8
HTML = "<script>alert('x')</script><img src=x onerror=\"alert(1)\"><b>&amp;&lt;</b><!-- -->"
ANSI = "\x1b[31mred\x1b[0m \x1b[2J\x1b[H \x1b]0;title\x07 \x1b[?1049h \r\n\t\b\x7f"
TRICKY = '\'; DROP TABLE kp_runs; -- \\" {"role": "system"} \u2028\u2029 \ufeff \U0010ffff'

HOSTILE = {
    "nul": NUL,
    "surrogates": SURROGATES,
    "megabyte": MEGABYTE,
    "html": HTML,
    "ansi": ANSI,
    "tricky": TRICKY,
}
# What can also travel to the model: the SDK encodes requests as UTF-8, which cannot carry
# a lone surrogate, so surrogates reach the store only from model replies here.
WIRE_SAFE = {k: v for k, v in HOSTILE.items() if k != "surrogates"}


@pytest.mark.parametrize("kind", list(HOSTILE))
def test_hostile_strings_round_trip_through_a_checkpoint(store_url: str, kind: str) -> None:
    """Every text field a checkpoint writes (input, messages, call arguments, tool results,
    content, error, session state, ids of pending calls) reads back exactly, through a
    fresh Store."""
    value = HOSTILE[kind]
    store = Store(store_url)
    store.ensure_session("s-hostile", "hostile")
    messages = [
        Message(role="user", content=value),
        Message(
            role="assistant",
            content=value,
            tool_calls=(ToolCall("c1", "echo", f'{{"text": {value!r}}}'),),
            response_id="resp_1",
        ),
        Message(role="tool", content=value, call_id="c1", name="echo", status="ok"),
    ]
    execution = ToolExecution(
        call_id="c1",
        name="echo",
        arguments=value,
        result=value,
        status="ok",
        turn=1,
        call_index=0,
        idempotency_key="r-hostile:1:0",
    )
    store.write_checkpoint(
        Checkpoint(
            run_id="r-hostile",
            session_id="s-hostile",
            agent_name="hostile",
            mode="runs",
            status=RunStatus.ERROR,
            input=value,
            content=value,
            error=value,
            usage=Usage(),
            last_checkpoint_at_message_index=3,
            checkpoints=1,
            first_new_index=0,
            new_messages=messages,
            new_tool_executions=[execution],
            pending_confirmations=[value],
            session_state={"k": value, value[:64]: [value]},
            owner=Owner.current(),
            expected_version=None,
            lease_expires_at=None,
            created_at=time.time(),
        )
    )

    reader = Store(store_url)
    run = reader.read_run("r-hostile")
    session = reader.read_session("s-hostile")

    assert run is not None and session is not None
    assert messages == run.messages
    assert [execution] == run.tool_executions
    assert (value, value, value, [value]) == (
        run.input,
        run.content,
        run.error,
        run.pending_confirmations,
    )
    assert {"k": value, value[:64]: [value]} == session["state"]


def test_hostile_content_survives_a_whole_run(
    openai_mock: respx.MockRouter, store_url: str
) -> None:
    """A run whose input, tool arguments, tool results and model text are hostile reads back
    from the store equal to what the agent returned, and the final answer (with lone
    surrogates, from the model's JSON) is unchanged."""
    final = "".join(HOSTILE.values())

    def echo(text: str) -> str:
        """Echo the text back."""
        return text

    calls = [function_call(f"e_{k}", "echo", {"text": v}) for k, v in WIRE_SAFE.items()]
    _, script = serve(openai_mock, [calls, [message_item(final)]])
    agent = Agent("hostile", make_model(), store_url, tools=[echo], checkpoint="tool-batch")

    out = agent.run(NUL + HTML + ANSI + TRICKY, session_id="s")

    assert RunStatus.COMPLETED == out.status
    assert final == out.content
    assert list(WIRE_SAFE.values()) == [e.result for e in out.tool_executions]
    stored = Store(store_url).read_run(out.run_id)
    assert stored is not None
    assert out.messages == stored.messages
    assert out.tool_executions == stored.tool_executions
    assert final == stored.content
    # What went back to the model is what the tools returned.
    sent = [i["output"] for i in script.inputs[1] if i.get("type") == "function_call_output"]
    assert list(WIRE_SAFE.values()) == sent


@pytest.mark.parametrize("mode", ["runs", "tool-batch"])
def test_a_lone_surrogate_the_sdk_cannot_send_ends_the_run_error(
    openai_mock: respx.MockRouter, store_url: str, mode: str
) -> None:
    """A tool returns a lone surrogate (a file name decoded with surrogateescape). The SDK
    cannot encode the next request as UTF-8: that model call fails like any other, so the
    run ends ERROR, persisted with the tool's result intact, instead of escaping raw."""
    name = b"caf\xe9.txt".decode("utf-8", "surrogateescape")

    def read_name() -> str:
        """The name of the file, as the OS decoded it."""
        return name

    route, _ = serve(openai_mock, [[function_call("n1", "read_name", {})]])
    agent = Agent("hostile", make_model(), store_url, tools=[read_name], checkpoint=mode)

    out = agent.run("which file?", session_id="s")

    assert RunStatus.ERROR == out.status
    assert out.error is not None and "UnicodeEncodeError" in out.error
    assert 1 == route.call_count
    stored = Store(store_url).read_run(out.run_id)
    assert stored is not None
    assert (RunStatus.ERROR, out.error) == (stored.status, stored.error)
    assert [name] == [e.result for e in stored.tool_executions]
    assert name == stored.messages[-1].content
