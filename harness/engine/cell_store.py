"""A cell's run, reading: the store (through the adapter, each call within the cell's time
limit), the ledger and the scripted model's records, and what they say of the crash: the
calls in flight, the run to continue, a terminal status that must not change.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, cast

from killpoint.adapters.blame import charged, checked, checked_progress
from killpoint.engine.polling import poll
from killpoint.judge import contract
from killpoint.judge.baseline import durable_results, effects
from killpoint.judge.left_out import batch_durable, left_out
from killpoint.judge.terminal_early import terminal_early
from killpoint.kinds.base import Plan
from killpoint.scenarios import history
from killpoint.scenarios import ledger as ledger_mod
from killpoint.scenarios.model import (
    SERVED_LOG,
    TURNS_LOG,
    regenerated_turns,
    turn_log,
)
from killpoint.values.findings import Finding
from killpoint.values.modes import find
from killpoint.values.scenario_refs import resolve_scenario
from killpoint.values.sentences import count
from killpoint.workers.worker import LEDGER, MODEL_STATE

if TYPE_CHECKING:
    from killpoint.adapters.protocol import RuntimeAdapter
    from killpoint.stores import StoreBackend

from killpoint.engine.cell_base import CellBase, Signature


class StoreReading(CellBase):
    """A cell's run as a kind reads the store and the run's files
    (killpoint.kinds.base.CellStore)."""

    @property
    def adapter(self) -> RuntimeAdapter:
        return self.engine.adapter(self.cell.runtime)

    @property
    def stores(self) -> StoreBackend:
        return cast("StoreBackend", BoundedStores(self))

    def read(self) -> dict[str, Any] | None:
        return self.call(
            "the adapter's read_session()", self.engine.read_session, self.cell.runtime, self.url
        )

    def progress(self) -> int:
        landed = self.call(
            "the adapter's progress()",
            charged("progress()", self.adapter.progress),
            self.url,
            self.engine.session_id,
        )
        return checked_progress(landed)

    def lease_deadline(self) -> float | None:
        deadline = self.call(
            "the adapter's lease_deadline()",
            charged("lease_deadline()", self.adapter.lease_deadline),
            self.url,
            self.engine.session_id,
        )
        if deadline is None:
            return None
        return float(checked("lease_deadline()", deadline, (int, float), "a time.time() or None"))

    def confirm(self, predicate: Callable[[], bool]) -> bool:
        return poll(predicate, self.engine.config.confirm_timeout, self.engine.stopping)

    def ledger(self) -> list[ledger_mod.Entry]:
        """Every tool execution the cell's workers recorded so far."""
        assert self.work is not None
        return ledger_mod.read(self.work / LEDGER)

    def model_turns(self, served: bool = False) -> list[tuple[int, int]]:
        """(model turn, pid) of every request the scripted model got in this cell, from
        any worker; `served`: of every reply it answered."""
        assert self.work is not None
        return turn_log(self.work / MODEL_STATE, SERVED_LOG if served else TURNS_LOG)

    def history(self) -> list[history.Event]:
        """The cell's history so far: every worker's events, in order."""
        assert self.work is not None
        return history.read(self.work / history.HISTORY)

    def regenerated(self) -> list[dict[str, Any]]:
        assert self.work is not None
        return regenerated_turns(self.work / MODEL_STATE)

    def in_flight(
        self, session: dict[str, Any] | None, entries: list[ledger_mod.Entry] | None = None
    ) -> Counter[Signature]:
        """Calls whose effect happened (ledger) but whose result is not durable (store),
        beyond those already allowed: what a resume may repeat once each."""
        entries = self.ledger() if entries is None else entries
        return (effects(entries) - durable_results(session, entries)) - self.allowed

    def allow_in_flight(self, session: dict[str, Any] | None, held: int) -> None:
        """At a crash: each call in flight may repeat once; one whose result a checkpoint
        of its batch left out (killpoint.judge.left_out) was not in flight, and may not.
        `held`: the checkpoints the store holds (a power cut takes back landed ones)."""
        entries = self.ledger()
        flight = self.in_flight(session, entries)
        left: dict[Signature, int] = {}
        if flight and batch_durable(find(self.adapter.modes, self.cell.mode)):
            left = left_out(self.history(), flight, entries, held)
        kept = Counter({sig: n for sig, n in flight.items() if sig not in left})
        self.allow(kept, "with their effect done and no durable result")
        self.left_out.update(left)
        for number in sorted(set(left.values())):
            calls = [sig for sig, n in left.items() if n == number]
            self.fault(
                f"{count(len(calls), 'call')} returned before checkpoint {number} began, "
                f"which landed without {'its result' if len(calls) == 1 else 'their results'}: "
                "no repeat allowed (the mode makes a batch's results durable with it)"
            )

    def at_crash(self, when: str) -> tuple[int, dict[str, Any] | None]:
        held = self.progress()
        session = self.read()
        self.observe(when, session)
        self.held_to_end(held, session)
        if self.store_at_crash is None:
            self.store_at_crash = summary(session, held)
        return held, session

    def held_to_end(self, held: int, session: dict[str, Any] | None) -> None:
        """A run the store holds COMPLETED or CANCELLED must be over at this point of the
        uninterrupted run (killpoint.judge.terminal_early); said once per run."""
        runs = (session or {}).get("runs", {}).values()
        if not any(run.get("status") in contract.TERMINAL for run in runs):
            return  # the common case, judged without resolving the scenario (a cassette's file)
        schedule = self.cell.schedule
        point = str(schedule[len(schedule) - len(self.rest) - 1])  # the crash just made
        said = {f.path for f in self.findings if f.kind == "terminal-early"}
        cancel_turn = resolve_scenario(self.cell.scenario).cancel_at_turn
        for finding in terminal_early(self.base, session, held, point, cancel_turn):
            if finding.path not in said:
                self.add(finding)
                self.fault(f"store: {finding.sentence}")

    def observe(self, when: str, session: dict[str, Any] | None) -> None:
        """A reading of the store: a run once durably COMPLETED or CANCELLED must stay so."""
        for run_id, finding in contract.regressed(self.terminal, session, when).items():
            self.add(finding)
            del self.terminal[run_id]  # said once per run
        for run_id, run in (session or {}).get("runs", {}).items():
            if run["status"] in contract.TERMINAL:
                self.terminal.setdefault(run_id, run["status"])

    def next_step(self, plan: Plan, session: dict[str, Any] | None) -> dict[str, Any] | None:
        """What a fresh worker must do after the crash: continue run i, start run i+1, or
        nothing (the session is finished). Ends the cell when the run is gone."""
        runs = list((session or {}).get("runs", {}).values())
        i = plan.run_index
        if i >= len(runs):
            landed = plan.checkpoints - plan.run_started_at
            expected = plan.expects_loss
            self.end(
                Finding.of(
                    "run-lost",
                    {"run": i + 1, "landed": 0 if expected else landed},
                    path=f"runs[{i}]",
                    expected=expected,
                )
            )
        status = runs[i]["status"]
        if status == "CANCELLED":
            return None
        if status == "COMPLETED":
            inputs = len(resolve_scenario(self.cell.scenario).inputs)
            return None if i + 1 >= inputs else {"start_at": i + 1}
        return {"resume_at": i}


class BoundedStores:
    """The store backend as a cell's kind uses it: each call that asks the server
    something is made within the cell's time limit (past it, the cell is `unavailable`)."""

    # Their own limits (a restart waits for the server as long as it takes), or no I/O.
    UNBOUNDED = frozenset({"kind", "shown", "with_lock_timeout", "restart", "restart_problem"})

    def __init__(self, run: CellBase) -> None:
        self._run = run

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._run.engine.stores, name)
        if name in self.UNBOUNDED or not callable(value):
            return value

        def bounded(*args: Any) -> Any:
            return self._run.call(f"the store's {name}()", value, *args, dependency=True)

        return bounded


def summary(session: dict[str, Any] | None, checkpoints: int) -> dict[str, Any]:
    """The store at the crash, in a few figures per run."""
    if session is None:
        return {"session": None, "checkpoints": checkpoints}
    return {
        "checkpoints": checkpoints,
        "runs": [
            {
                "run": n + 1,
                "status": r["status"],
                "messages": len(r["messages"]),
                "last_checkpoint_at_message_index": r["last_checkpoint_at_message_index"],
                "tool_executions": len(r["tool_executions"]),
            }
            for n, r in enumerate(session["runs"].values())
        ],
    }


__all__ = ["BoundedStores", "StoreReading", "summary"]
