# ruff: noqa: SIM300 - tests assert `expected == actual`
"""`killpoint.effect`: an agent's own tools in the ledger while killpoint runs them, a plain
call anywhere else."""

from __future__ import annotations

import asyncio
import inspect
import subprocess
import sys
from pathlib import Path

import pytest

from killpoint.scenarios import Ledger, ToolEnv, idempotent, intent
from killpoint.scenarios.effects import LEDGER_VARIABLE, current_ledger, effect, use_ledger


@effect
def send_email(to: str, body: str = "hi") -> str:
    """Send an email."""
    return f"sent to {to}"


@effect
@intent("to")
async def notify(to: str, text: str) -> str:
    return f"notified {to}"


@pytest.fixture
def ledger(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Ledger:
    made = Ledger(tmp_path / "ledger.jsonl", "agent")
    for name, value in use_ledger(made).items():
        monkeypatch.setenv(name, value)
    return made


def test_outside_killpoint_it_is_the_tool(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(LEDGER_VARIABLE, raising=False)
    assert None is current_ledger()
    assert "sent to a@x" == send_email("a@x")
    assert ["to", "body"] == list(inspect.signature(send_email).parameters)
    assert ("send_email", "Send an email.") == (send_email.__name__, send_email.__doc__)


def test_each_execution_is_recorded_however_it_is_called(ledger: Ledger) -> None:
    send_email("a@x")
    send_email(to="b@x", body="yo")
    entries = ledger.entries()
    assert [("started", '{"to":"a@x"}'), ("finished", '{"to":"a@x"}'),
            ("started", '{"body":"yo","to":"b@x"}'), ("finished", '{"body":"yo","to":"b@x"}')] == [
        (e.phase, e.arguments) for e in entries
    ]  # fmt: skip


def test_an_async_tool_records_its_declared_intent(ledger: Ledger) -> None:
    assert "notified a" == asyncio.run(notify(to="a", text="one"))
    asyncio.run(notify(to="a", text="another wording"))
    started = [e for e in ledger.entries() if e.phase == "started"]
    assert {('"to":"a"')} == {e.intent.strip("{}") for e in started if e.intent}
    assert 1 == len({e.effect_signature for e in started})  # one effect, done twice


def test_a_tool_that_raises_is_recorded_finished(ledger: Ledger) -> None:
    @effect
    def charge(amount: int) -> str:
        raise RuntimeError("declined")

    with pytest.raises(RuntimeError):
        charge(5)
    assert ["started", "finished"] == [e.phase for e in ledger.entries()]


def test_idempotent_above_effect_sees_its_key(ledger: Ledger) -> None:
    @idempotent
    @effect
    def refund(order: str, idempotency_key: str) -> str:
        return "refunded"

    refund(order="o1", idempotency_key="k1")
    refund(order="o1", idempotency_key="k1")
    assert [True, False] == [e.effect for e in ledger.entries() if e.phase == "started"]


def test_a_scenario_ledger_takes_the_tool_over(tmp_path: Path, ledger: Ledger) -> None:
    """A scenario's tools that are marked `effect` too are recorded once, in the scenario's
    ledger."""
    own = Ledger(tmp_path / "scenario.jsonl", "s")
    ToolEnv(own).wrap(send_email)(to="c@x")
    assert [] == ledger.entries()
    assert ["started", "finished"] == [e.phase for e in own.entries()]


def test_a_child_process_records_into_the_same_ledger(ledger: Ledger) -> None:
    code = "from tests.scenarios.test_effects import send_email; send_email('child@x')"
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])
    assert {'{"to":"child@x"}'} == {e.arguments for e in ledger.entries()}
