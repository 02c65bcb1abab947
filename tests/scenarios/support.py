"""Run a scenario end to end on the reference runtime and normalise what it left behind."""

from __future__ import annotations

import asyncio
import dataclasses
import os
import select
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from killpoint.adapters.reference import ReferenceDriver
from killpoint.runtime import RunOutput
from killpoint.scenarios import Entry, Ledger, RunResult, Scenario, ScriptedModel, drive

SESSION = "s1"


@dataclass
class Outcome:
    """Everything one drive of a scenario produced."""

    scenario: Scenario
    mode: str
    results: list[RunResult]  # the last result of each run
    seen: list[RunResult]  # every result the runtime returned, in order (PAUSED, ERROR, ...)
    runs: list[RunOutput]  # each run as the store holds it afterwards
    ledger: list[Entry]
    traffic: list[tuple[str, int, str]]  # (request body, status, response body)
    driver: ReferenceDriver
    model: ScriptedModel

    def calls(self, index: int = 0) -> tuple[str, ...]:
        return calls_of(self.runs[index])

    def normalised(self) -> dict[str, Any]:
        """The runs, the ledger (without pids and times, as a sorted multiset: calls of a
        batch run concurrently) and the model traffic."""
        return {
            "runs": [normalise_run(r) for r in self.runs],
            "ledger": ledger_multiset(self.ledger),
            "traffic": self.traffic,
        }


def calls_of(run: RunOutput) -> tuple[str, ...]:
    """Tool names in the order the model called them."""
    return tuple(c.name for m in run.messages for c in m.tool_calls)


def normalise_run(run: RunOutput) -> dict[str, Any]:
    data = dataclasses.asdict(run)
    data["status"] = run.status.value
    return data


def ledger_multiset(entries: list[Entry]) -> list[tuple[Any, ...]]:
    return sorted((e.tool, e.arguments, e.key or "", e.phase, e.effect) for e in entries)


def run_scenario(
    scenario: Scenario,
    workdir: Path,
    mode: str,
    *,
    ledger_path: Path | None = None,
    configure: Callable[[ReferenceDriver], None] | None = None,
) -> Outcome:
    """Drive every input of `scenario` on a fresh SQLite store and a fresh model state."""
    workdir.mkdir(parents=True, exist_ok=True)
    model = ScriptedModel(
        scenario.script, workdir / "model", faults=scenario.faults, record_traffic=True
    )
    ledger = Ledger(ledger_path or workdir / "ledger.jsonl", scenario.name)
    driver = ReferenceDriver(scenario, f"sqlite:///{workdir / 'store.db'}", mode, ledger)
    if configure is not None:
        configure(driver)
    seen: list[RunResult] = []
    with model:
        results = asyncio.run(
            drive(scenario, driver, model, session_id=SESSION, on_result=seen.append)
        )
    runs = [driver.agent.get_run(r.run_id) for r in results]
    assert all(r is not None for r in runs), f"a run is missing from the store: {results}"
    driver.agent.db.dispose()
    return Outcome(
        scenario=scenario,
        mode=mode,
        results=results,
        seen=seen,
        runs=[r for r in runs if r is not None],
        ledger=ledger.entries(),
        traffic=list(model.traffic),
        driver=driver,
        model=model,
    )


def read_line(fd: int, timeout: float = 30.0) -> str:
    """One line from a pipe; fails (instead of hanging) if nothing comes within `timeout`."""
    data = b""
    while not data.endswith(b"\n"):
        ready, _, _ = select.select([fd], [], [], timeout)
        if not ready:
            raise AssertionError(f"nothing announced on fd {fd} within {timeout}s: {data!r}")
        chunk = os.read(fd, 1)
        if not chunk:
            raise AssertionError(f"the pipe closed before a full line: {data!r}")
        data += chunk
    return data.decode().rstrip("\n")
