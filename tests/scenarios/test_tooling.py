# ruff: noqa: SIM300 - tests assert `expected == actual`
"""ToolEnv.wrap puts every execution in the ledger; @idempotent honours idempotency keys."""

from __future__ import annotations

import asyncio
import inspect
from pathlib import Path

import pytest

from killpoint.runtime import Tool
from killpoint.scenarios import Ledger, ToolEnv, idempotent


@pytest.fixture
def ledger(tmp_path: Path) -> Ledger:
    return Ledger(tmp_path / "ledger.jsonl", "tooling")


def test_wrap_keeps_name_signature_and_docstring(ledger: Ledger) -> None:
    """Runtimes build tool schemas from these, so the wrapper must not change them; the
    runtime still injects the idempotency key and hides it from the model."""

    @idempotent
    def charge(customer: str, amount: int, idempotency_key: str) -> str:
        """Charge a customer."""
        return "ok"

    wrapped = ToolEnv(ledger).wrap(charge)
    tool = Tool.from_function(wrapped)
    expected = ("charge", inspect.signature(charge), "Charge a customer.", ["customer", "amount"])
    actual = (
        wrapped.__name__,
        inspect.signature(wrapped),
        wrapped.__doc__,
        tool.parameters["required"],
    )
    assert expected == actual
    assert frozenset({"idempotency_key"}) == tool.injected


def test_an_idempotent_tool_has_no_effect_on_a_repeated_key(ledger: Ledger) -> None:
    """Keys k1, k1, k2: the repeat records effect=False; the tool still answers."""

    @idempotent
    def send(to: str, idempotency_key: str) -> str:
        return f"sent to {to}"

    tool = ToolEnv(ledger).wrap(send)
    answers = [tool(to="ana", idempotency_key=k) for k in ("k1", "k1", "k2")]
    started = [(e.key, e.effect) for e in ledger.entries() if e.phase == "started"]
    assert [("k1", True), ("k1", False), ("k2", True)] == started
    assert ["sent to ana"] * 3 == answers


def test_a_plain_tool_has_an_effect_every_time(ledger: Ledger) -> None:
    """Without @idempotent a repeated key is a repeated effect (what duplicates look like)."""

    def send(to: str, idempotency_key: str) -> str:
        return "sent"

    tool = ToolEnv(ledger).wrap(send)
    tool(to="ana", idempotency_key="k1")
    tool(to="ana", idempotency_key="k1")
    assert [True, True] == [e.effect for e in ledger.entries() if e.phase == "started"]


def test_idempotent_needs_an_idempotency_key_parameter() -> None:
    """Marking a tool that cannot receive the key is a definition error."""

    def send(to: str) -> str:
        return "sent"

    with pytest.raises(TypeError, match="idempotency_key"):
        idempotent(send)


def test_a_raising_tool_is_started_and_finished_and_still_raises(ledger: Ledger) -> None:
    """The error reaches the runtime (it becomes the tool's result) and the ledger shows
    the call as finished, so it is not mistaken for one cut short by a crash."""

    def broken(x: int) -> str:
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        ToolEnv(ledger).wrap(broken)(x=1)
    assert [("broken", '{"x":1}', "started"), ("broken", '{"x":1}', "finished")] == [
        (e.tool, e.arguments, e.phase) for e in ledger.entries()
    ]


def test_async_tools_are_wrapped_the_same_way(ledger: Ledger) -> None:
    """A coroutine tool stays a coroutine function and is recorded like a sync one."""

    @idempotent
    async def fetch(url: str, idempotency_key: str) -> str:
        return url.upper()

    wrapped = ToolEnv(ledger).wrap(fetch)

    async def twice() -> list[str]:
        return [
            await wrapped(url="a", idempotency_key="k"),
            await wrapped(url="a", idempotency_key="k"),
        ]

    answers = asyncio.run(twice())
    expected = (
        True,
        ["A", "A"],
        [("started", True), ("finished", True), ("started", False), ("finished", True)],
    )
    actual = (
        inspect.iscoroutinefunction(wrapped),
        answers,
        [(e.phase, e.effect) for e in ledger.entries()],
    )
    assert expected == actual


def test_an_intent_makes_two_spellings_one_effect(ledger: Ledger) -> None:
    """A tool that declares its intent has its effects counted by it: the same charge sent
    again as 1999.0, or a message reworded, is one effect done twice."""
    from killpoint.scenarios import intent

    @intent("customer", "amount_cents")
    def charge(customer: str, amount_cents: int, note: str = "") -> str:
        """Charge."""
        return "ok"

    wrapped = ToolEnv(ledger).wrap(charge)
    wrapped(customer="c", amount_cents=1999)
    wrapped(customer="c", amount_cents=1999.0, note="again, in other words")
    started = [e for e in ledger.entries() if e.phase == "started"]
    assert started[0].signature != started[1].signature
    assert started[0].effect_signature == started[1].effect_signature
    assert ("charge", '{"amount_cents":1999,"customer":"c"}') == started[0].effect_signature


def test_an_intent_must_name_the_tools_own_arguments() -> None:
    from killpoint.scenarios import intent

    def send(to: str, idempotency_key: str) -> str:
        """Send."""
        return "ok"

    with pytest.raises(TypeError, match="must name its own arguments"):
        intent("subject")(send)
    with pytest.raises(TypeError, match="must name its own arguments"):
        intent("idempotency_key")(send)
