"""Drive a scenario to its end through any runtime: start, answer pauses, continue errors."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from . import gates, history
from .scenario import Scenario


@dataclass
class RunResult:
    """What a runtime returned for one run, in the runtime-neutral form drivers need."""

    run_id: str
    status: str  # a RunStatus value
    content: str | None = None
    # PAUSED: (call_id, tool name) of the calls that wait for confirmation.
    pending: list[tuple[str, str]] = field(default_factory=list)


class Driver(Protocol):
    """The three things a scenario needs from a runtime."""

    async def start(self, input: str, *, session_id: str, run_id: str) -> RunResult: ...

    async def resume(
        self, run_id: str, *, session_id: str, confirmations: Mapping[str, bool]
    ) -> RunResult: ...

    def cancel(self, run_id: str) -> None: ...


class TurnHooks(Protocol):
    """What a scenario's drive asks of the model: a call when a model turn is requested
    (the scripted model, or the recording proxy)."""

    def on_turn(self, turn: int, hook: Callable[[], None]) -> None: ...


def run_id_for(session_id: str, index: int) -> str:
    """Deterministic run ids, so a baseline and a resumed run name the same runs."""
    return f"{session_id}-run{index + 1}"


async def drive(
    scenario: Scenario,
    driver: Driver,
    model: TurnHooks,
    *,
    session_id: str,
    resume_at: int | None = None,
    start_at: int = 0,
    on_result: Callable[[RunResult], None] | None = None,
) -> list[RunResult]:
    """Run the scenario's inputs in one session: from input `start_at`, or, with
    `resume_at=i`, by continuing run i (after a crash) and then the runs after it.

    Gates `run:{i}:start` / `run:{i}:resume` mark each run's beginning; `on_result`
    hears every run's result as soon as the runtime returns it (an acknowledgement).
    """
    results: list[RunResult] = []
    first = start_at if resume_at is None else resume_at
    current = [""]  # the run in flight: the one a scripted cancel is aimed at
    if scenario.cancel_at_turn is not None:
        model.on_turn(scenario.cancel_at_turn, lambda: driver.cancel(current[0]))
    for index in range(first, len(scenario.inputs)):
        run_id = run_id_for(session_id, index)
        current[0] = run_id
        if index == resume_at:
            gates.hit(gates.run_gate(index + 1, "resume"))
            history.record("run", index=index + 1, run_id=run_id, how="resume")
            result = await driver.resume(run_id, session_id=session_id, confirmations={})
        else:
            gates.hit(gates.run_gate(index + 1, "start"))
            history.record("run", index=index + 1, run_id=run_id, how="start")
            result = await driver.start(
                scenario.inputs[index], session_id=session_id, run_id=run_id
            )
        acknowledged(result, on_result)
        result = await settle(scenario, driver, result, session_id=session_id, on_result=on_result)
        results.append(result)
        if result.status != "COMPLETED":
            break
    return results


async def settle(
    scenario: Scenario,
    driver: Driver,
    result: RunResult,
    *,
    session_id: str,
    on_result: Callable[[RunResult], None] | None = None,
) -> RunResult:
    """Answer pauses and continue errors as the scenario says, until the run rests."""
    errors = 0
    while True:
        if result.status == "PAUSED" and result.pending:
            answers = {cid: scenario.confirm.get(name, True) for cid, name in result.pending}
            history.record("run", run_id=result.run_id, how="continue")
            result = await driver.resume(
                result.run_id, session_id=session_id, confirmations=answers
            )
        elif result.status == "ERROR" and errors < scenario.continue_on_error:
            errors += 1
            history.record("run", run_id=result.run_id, how="continue")
            result = await driver.resume(result.run_id, session_id=session_id, confirmations={})
        else:
            return result
        acknowledged(result, on_result)


def acknowledged(result: RunResult, on_result: Callable[[RunResult], None] | None) -> None:
    """The runtime returned `result` to its caller: an acknowledgement."""
    history.record("ack", run_id=result.run_id, status=result.status)
    if on_result is not None:
        on_result(result)
