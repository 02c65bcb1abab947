"""One cell, run: the context a crash-point kind drives (killpoint.kinds.base.CellContext),
and the findings it collects on the way.

The kind says what happens at its point (start, reach, kill or fault, continue); this
module does each step the same way for every kind: confirm a point in the store, kill and
count what was in flight, inspect the store after a crash, check what the workers
acknowledged, continue the run (or crash it again), compare with the baseline and check
the contract. A step that cannot go on (a point not reached, a worker past its time
limit, a run gone) records its finding and ends the cell (`CellOver`); whatever ended it,
the ledger's effects are counted at the end.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from killpoint import kinds
from killpoint.adapters.blame import AdapterFault, charged, checked, checked_problems
from killpoint.engine.deadline import Caller, Overdue
from killpoint.engine.polling import poll
from killpoint.engine.stall import holds_commit_lock, pause_unlocked, paused_lock
from killpoint.judge import contract
from killpoint.judge.baseline import Baseline, durable_results, effects
from killpoint.judge.cassette import with_history
from killpoint.judge.oracle import (
    Sides,
    comparable,
    compare_sessions,
    count_effects,
    differences,
    effect_findings,
)
from killpoint.kinds.base import Plan
from killpoint.scenarios import gates
from killpoint.scenarios import ledger as ledger_mod
from killpoint.scenarios.model import (
    SERVED_LOG,
    TURNS_LOG,
    regenerated_turns,
    requested_turns,
    turn_log,
)
from killpoint.stores.outage import outage_finding
from killpoint.values.cell import Cell, CellResult
from killpoint.values.durations import offset
from killpoint.values.findings import Finding, headline, ranked, verdict_of
from killpoint.values.scenario_refs import resolve_scenario
from killpoint.values.sentences import count, times
from killpoint.values.timeline import Event
from killpoint.workers.processes import Worker, kill_left_behind
from killpoint.workers.worker import LEDGER, MODEL_STATE

if TYPE_CHECKING:
    from killpoint.adapters.protocol import RuntimeAdapter
    from killpoint.engine.cell_host import CellHost
    from killpoint.engine.state_copy import Copy
    from killpoint.stores import StoreBackend

Signature = tuple[str, str]
T = TypeVar("T")
LOG_TAIL_LINES = 25
LOG_TAIL_BYTES = 64 * 1024  # what log_tail reads of a worker's log, from its end
LOG_LINE_CHARS = 2000  # of one line: an 8 MiB line is shown by its end
# Seconds the counts must stay unchanged at a point where a write stays in flight.
SETTLE = 0.1


class CellOver(Exception):
    """The cell cannot go on; its findings say why."""


class CellRun:
    def __init__(self, engine: CellHost, cell: Cell, base: Baseline) -> None:
        self.engine = engine
        self.cell = cell
        self.base = base
        self.t0 = time.monotonic()
        # The same zero on the wall clock: the ledger stamps effects with time.time(), and
        # its lines are shown on the cell's one clock (never from their own first line).
        self.wall0 = time.time()
        self.timeline: list[Event] = []
        self.workers: list[Worker] = []
        self.findings: list[Finding] = []
        self.work: Path | None = None
        self.url = ""
        self.store_at_crash: dict[str, Any] | None = None
        self.allowed: Counter[Signature] = Counter()  # repeats the crashes so far allow
        self.judged = False  # the run was continued to its end and compared
        self.rest = cell.schedule.rest  # crashes still to come (depth 2)
        self.terminal: dict[str, str] = {}  # run id -> the terminal status the store held
        self.sides = Sides()
        self.diff: list[dict[str, Any]] = []
        self.kind_evidence: dict[str, Any] = {}  # a kind's own, shown with the store at the crash
        self.confirmed: int | None = None  # checkpoints held when a lagging point was confirmed
        self.copy: Copy | None = None  # the state a traced worker left at the first point
        # The engine-side calls into the adapter and the store server, each with a deadline.
        self.caller = Caller(f"cell-{cell.id}"[:40], engine.stopping)

    # -- what kinds use -----------------------------------------------------------------------

    @property
    def adapter(self) -> RuntimeAdapter:
        return self.engine.adapter(self.cell.runtime)

    @property
    def stores(self) -> StoreBackend:
        return cast("StoreBackend", BoundedStores(self))

    @property
    def cell_id(self) -> str:
        return self.cell.id

    @property
    def cut(self) -> str:
        return self.engine.config.cut

    def options(self) -> tuple[str, ...]:
        """The campaign's options this cell ran with that its id does not carry: a cut
        model other than the default, for a cell of a kind that cuts the power (whether
        or not it got as far as the cut)."""
        cuts = any(getattr(kinds.get(p.kind), "cuts", False) for p in self.cell.schedule)
        if cuts and self.cut != "synced":
            return ("--cut", self.cut)
        return ()

    def call(self, what: str, fn: Callable[..., T], *args: Any, dependency: bool = False) -> T:
        """`fn(*args)` in the engine, within the cell's time limit. Past it the cell ends:
        `hung` for the runtime's adapter, `unavailable` for a `dependency` (the store
        server)."""
        try:
            return self.caller.call(what, self.engine.config.timeout, fn, *args)
        except Overdue as exc:
            self.fault(str(exc))
            if dependency:
                self.end(outage_finding("store-unavailable", f"the store server: {exc}", []))
            self.end(Finding("hung", f"{exc} (a call in killpoint's own process)"))
            raise  # not reached: end() raises
        except AdapterFault as exc:
            # A read that met a lock a paused worker holds is the store's locking.
            stall = paused_lock(self.url, self.workers, f"{what} failed: {exc}")
            if stall is not None:
                self.end(stall)
            raise

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
        return checked("progress()", landed, int, "the number of checkpoints landed (an int)")

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

    def sleep_until(self, when: float) -> None:
        self.engine.slots.sleep_until(when)

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

    def regenerated(self) -> list[dict[str, Any]]:
        assert self.work is not None
        return regenerated_turns(self.work / MODEL_STATE)

    def event(self, text: str, kind: str = "other", lane: str = "harness") -> None:
        self.timeline.append(Event(round(time.monotonic() - self.t0, 4), text, kind, lane))

    def fault(self, text: str) -> None:
        self.event(text, "fault", "faults")

    def deadline(self) -> float:
        return time.monotonic() + self.engine.config.timeout

    def add(self, finding: Finding) -> None:
        self.findings.append(finding)

    def evidence(self, name: str, value: dict[str, Any]) -> None:
        self.kind_evidence[name] = value

    def end(self, finding: Finding) -> None:
        # A worker that waited on, or failed at, SQLite's lock held by a paused worker.
        if finding.kind == "hung" or (
            finding.kind == "unresumable" and "database is locked" in finding.sentence
        ):
            finding = paused_lock(self.url, self.workers, finding.sentence) or finding
        self.add(finding)
        raise CellOver(finding.sentence)

    def allow(self, signatures: Counter[Signature], why: str) -> None:
        """Each call may repeat once more (its effect happened, its result is not durable)."""
        self.allowed += signatures
        n = sum(signatures.values())
        self.event(f"{count(n, 'call')} {why}")

    def start(self, log_name: str, **spec: Any) -> Worker:
        assert self.work is not None
        url = spec.pop("store_url", self.url)
        spec.setdefault("checkpoint_trace", self.base.writes_lag)
        worker = Worker(
            self.engine.worker_spec(self.cell.row, url, self.work, log_name=log_name, **spec),
            self.timeline,
            self.t0,
            self.engine.stopping,
        )
        self.workers.append(worker)
        return worker

    def join(self, worker: Worker, what: str) -> str:
        out = worker.join(self.deadline())
        if out.kind == "timeout":
            self.end(Finding("hung", f"{what} passed its time limit ({out.detail})"))
        return f"{out.kind} {out.detail}".strip()

    def reach(self, worker: Worker, plan: Plan) -> None:
        out = worker.wait(plan.wait_for, self.deadline())
        if out.kind == "timeout":
            worker.kill()
            self.end(Finding("hung", f"{plan.point}: {out.detail}"))
        if out.kind != "gates":
            worker.kill()
            self.end(
                Finding(
                    "missed",
                    f"the worker ended ({out.kind}) before reaching {plan.point}: {out.detail}",
                )
            )

        if self.base.writes_lag and not at_checkpoint(plan):
            self.confirm_landed(worker, plan)
            return

        def there() -> bool:
            try:
                landed = self.progress()
            except AdapterFault:
                # Held inside its commit with the store's file lock (a rollback journal whose
                # transaction spilled pages to the file): no read can happen until the
                # worker ends, and the point kills it next anyway, so the count confirmed is
                # what the kill leaves.
                if not (worker.alive and holds_commit_lock(self.url, worker)):
                    raise
                worker.kill()
                self.event("the worker held the store's lock inside its commit: killed first")
                landed = self.progress()
            if landed != plan.checkpoints:
                return False
            return self.finished_first(plan)

        # The worker is parked at its gate: the state waited for is about to hold or never will.
        if not poll(there, self.engine.config.confirm_timeout, self.engine.stopping):
            held = self.progress()
            worker.kill()
            self.store_at_crash = summary(self.read(), held)
            self.end(
                Finding.of(
                    "checkpoint-count",
                    {"point": str(plan.point), "held": held, "wanted": plan.checkpoints},
                    path="store",
                    expected_value=plan.checkpoints,
                    actual_value=held,
                    sides=("checkpoints in the baseline there", "checkpoints in the store"),
                )
            )
        self.event(
            f"store confirms {count(plan.checkpoints, 'checkpoint')} at {plan.point}",
            "store",
            "store",
        )

    def pause(self, worker: Worker) -> None:
        retaken = pause_unlocked(
            self.url,
            worker,
            self.engine.config.confirm_timeout,
            self.deadline(),
            self.engine.stopping,
        )
        if retaken:
            self.event(
                f"the pause was taken again ({times(retaken)}): another thread of the worker "
                "held the store's SQLite lock"
            )

    def finished_first(self, plan: Plan) -> bool:
        """The calls the plan needs finished before its point have finished (ledger)."""
        done = self.ledger()
        for call in plan.finished_first:
            n = sum(
                1
                for e in done
                if e.phase == "finished" and e.signature == (call.tool, call.arguments)
            )
            if n < call.occurrence:
                return False
        return True

    def confirm_landed(self, worker: Worker, plan: Plan) -> None:
        """A point inside a step, in a mode whose writes lag: how many checkpoints have
        landed there is a race of this run, so it is read, not required. The worker
        announces each write it begins and lands; the store must hold every write
        announced as landed and none that was never begun. Waits for the writes to settle
        (the counts unchanged for SETTLE: a worker whose event loop is parked with it
        cannot announce a write its driver finishes), then says what the store holds; the
        kill's own reading is what the cell is judged on, and the timeline names any write
        that landed between the two."""
        seen: list[tuple[int, int, int]] = []
        since = [time.monotonic()]

        def settled() -> bool:
            # Landed writes announced before the store is read are in it; writes in it
            # were announced as begun before the pipe is read again.
            worker.drain()
            landed = announced(worker)[0]
            held = self.progress()
            worker.drain()
            counts = (landed, announced(worker)[1], held)
            if not seen or seen[-1] != counts:
                seen.append(counts)
                since[0] = time.monotonic()
            if not self.finished_first(plan):
                return False
            # Nothing in flight is not enough: a write queued behind the run may not have
            # begun yet, so the counts must also stay unchanged for SETTLE.
            return time.monotonic() - since[0] >= SETTLE

        if not poll(settled, self.engine.config.confirm_timeout, self.engine.stopping):
            worker.kill()
            self.end(
                Finding(
                    "missed",
                    f"at {plan.point} the calls before it had not finished "
                    f"({', '.join(c.tool for c in plan.finished_first)})"
                    if not self.finished_first(plan)
                    else f"at {plan.point} the worker's writes did not settle",
                )
            )
        landed, begun, held = seen[-1]
        if not landed <= held <= begun:
            worker.kill()
            self.store_at_crash = summary(self.read(), held)
            self.end(
                Finding.of(
                    "checkpoint-count",
                    {"point": str(plan.point), "held": held, "begun": begun, "landed": landed},
                    path="store",
                    expected_value=landed if held < landed else begun,
                    actual_value=held,
                    sides=("checkpoints the worker announced", "checkpoints in the store"),
                )
            )
        self.confirmed = held
        self.event(
            f"store holds {count(held, 'checkpoint')} at {plan.point} (worker: {landed} landed, "
            f"{begun} begun; writes lag, the baseline's trace had {plan.checkpoints} there)",
            "store",
            "store",
        )

    def kill(self, worker: Worker) -> None:
        worker.kill()

    def crash_at(self, plan: Plan) -> Sequence[Worker]:
        copy, self.copy = self.copy, None
        if copy is not None:
            # The copy in the cell's folder is what the kill would have left; it stands
            # for the crashed worker (after_crash reads only what it acknowledged).
            self.timeline += copy.events(self.t0)
            return cast("list[Worker]", [copy])
        worker = self.start("worker", gates=plan.arm)
        self.reach(worker, plan)
        self.kill(worker)
        return [worker]

    def in_flight(
        self, session: dict[str, Any] | None, entries: list[ledger_mod.Entry] | None = None
    ) -> Counter[Signature]:
        """Calls whose effect happened (ledger) but whose result is not durable (store),
        beyond those already allowed: what a resume may repeat once each."""
        entries = self.ledger() if entries is None else entries
        return (effects(entries) - durable_results(session, entries)) - self.allowed

    def after_crash(
        self,
        plan: Plan,
        crashed: Sequence[Worker],
        resume: Callable[[dict[str, Any], int], None] | None = None,
    ) -> None:
        held, session = self.at_crash("after the crash")
        if self.confirmed is not None and held != self.confirmed:
            # Writes queued behind the run kept landing between the confirmation and the
            # kill; the cell is judged on the kill's reading, so the timeline says so.
            self.event(
                f"store held {count(held, 'checkpoint')} at the kill ({held - self.confirmed:+d} "
                "since the point was confirmed: writes lag)",
                "store",
                "store",
            )
        self.confirmed = None
        if self.base.writes_lag and held != plan.checkpoints:
            # What landed before the crash is this run's race: judged on what the store holds.
            plan = replace(plan, checkpoints=held)
        self.allow(self.in_flight(session), "in flight without a durable result")
        found = self.call(
            "the adapter's inspect()",
            charged("inspect()", self.adapter.inspect),
            self.url,
            self.engine.session_id,
        )
        problems = [
            p if isinstance(p, Finding) else Finding("store-invariant", p, path="store")
            for p in checked_problems(found)
        ]
        for p in problems:
            self.fault(f"inspect: {p.sentence}")
            self.add(p)
        if any(p.verdict != "ok" for p in problems):
            raise CellOver("the store is broken after the crash")
        acked = contract.acknowledged([a for w in crashed for a in w.acks], session)
        if acked:
            for f in acked:
                self.add(f)
            raise CellOver("acknowledged state is not durable")
        self.event("inspect: store sound", "store", "store")
        step = self.next_step(plan, session)
        if step is None:
            self.compare()
            return
        if self.rest:
            self.crash_again(step, held)
            return
        if resume is not None:
            resume(step, held)
            self.compare()
            return
        resumer = self.start("resumer", checkpoint_offset=held, **step)
        out = resumer.join(self.deadline())
        if out.kind == "timeout":
            self.end(Finding("hung", f"the resumer passed its time limit ({out.detail})"))
        if out.kind != "done":
            self.end(Finding("unresumable", f"the resumed run failed: {out.detail}"))
        self.compare()

    def crash_again(self, step: dict[str, Any], held: int) -> None:
        """Depth 2: crash the resumed worker too, at a point of its own, reached and
        confirmed in the store as the first point was."""
        point, self.rest = self.rest[0], self.rest.rest
        plan = kinds.get(point.kind).plan(self.base, point)
        worker = self.start("resumer", gates=plan.arm, checkpoint_offset=held, **step)
        self.reach(worker, plan)
        self.kill(worker)
        self.after_crash(plan, [worker])

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

    def resume_gate(self, step: dict[str, Any]) -> str:
        """The gate a fresh worker passes as it takes the run up."""
        if "resume_at" in step:
            return gates.run_gate(step["resume_at"] + 1, "resume")
        return gates.run_gate(step["start_at"] + 1, "start")

    def observe(self, when: str, session: dict[str, Any] | None) -> None:
        """A reading of the store: a run once durably COMPLETED or CANCELLED must stay so."""
        for run_id, finding in contract.regressed(self.terminal, session, when).items():
            self.add(finding)
            del self.terminal[run_id]  # said once per run
        for run_id, run in (session or {}).get("runs", {}).items():
            if run["status"] in contract.TERMINAL:
                self.terminal.setdefault(run_id, run["status"])

    def compare_sides(self, expected: Any, actual: Any, sides: Sides) -> list[Finding]:
        return compare_sessions(expected, actual, sides)

    def at_crash(self, when: str) -> tuple[int, dict[str, Any] | None]:
        held = self.progress()
        session = self.read()
        self.observe(when, session)
        if self.store_at_crash is None:
            self.store_at_crash = summary(session, held)
        return held, session

    def compare(self) -> None:
        """The final session against the baseline, then the contract."""
        final = self.read()
        self.observe("at the end", final)
        self.judged = True
        found = compare_sessions(self.base.session, final, self.sides)
        self.findings += found
        if found:
            self.diff = [
                d.to_json() for d in differences(comparable(self.base.session), comparable(final))
            ]
        # Charged to the cell only beyond the overcount its baseline shows (the row's).
        overcount = contract.model_calls(final, len(self.model_turns(served=True)))
        self.findings += contract.added_by_crash(overcount, self.base.findings)
        self.final = final
        if not found:
            # Only what was compared: the contract and the ledger may still find more;
            # result() says so on this line when they do (never "matches" beside a
            # failing verdict without what else failed).
            self.matched = len(self.timeline)
            self.event(
                f"the session of the {self.sides.actual} matches that of the "
                f"{self.sides.expected}, field by field"
            )

    # -- the whole cell ---------------------------------------------------------------------

    def execute(self, copy: Copy | None = None) -> None:
        """The cell by its kind; from `copy`, the state a traced worker left at its first
        point (killpoint.engine.row_trace), resumed as after a kill there."""
        point = self.cell.schedule.first
        kind = kinds.get(point.kind)
        plan = kind.plan(self.base, point)
        self.work = self.engine.work_dir(self.cell.id)
        with contextlib.suppress(CellOver):
            if copy is not None:
                copy.place(self.work)
            self.url = self.call(
                "a new store (the store server)",
                self.engine.stores.fresh,
                self.work,
                dependency=True,
            )
            self.event(f"plan: {point} — {kind.describe(point)}")
            self.copy = copy
            kind.run(self, plan)

    def finish(self) -> None:
        """What is counted whatever ended the cell: the ledger's effects against the
        baseline's (every repeat), the contract checks on what ran."""
        if self.work is None:
            return
        # A request the cassette never recorded, before what it explains.
        self.findings = with_history(self.findings, self.work / MODEL_STATE)
        entries = self.ledger()
        counted = count_effects(self.base.effects, effects(entries))
        self.duplicates = counted.duplicates
        self.findings += effect_findings(
            counted,
            self.allowed,
            judged=self.judged,
            evidence=ledger_lines(entries, self.wall0),
        )
        self.findings += contract.idempotency(entries, self.base.effects)
        scenario = resolve_scenario(self.cell.scenario)
        # The same checks the baseline was held to: what it showed as it is here is the
        # row's finding, not this cell's.
        checked = contract.without_crash(
            scenario,
            self.final if self.judged else None,
            entries,
            requested_turns(self.work / MODEL_STATE),
        )
        self.findings += contract.added_by_crash(checked, self.base.findings)

    duplicates = 0
    final: dict[str, Any] | None = None  # the session compare() judged
    matched: int | None = None  # the timeline's "matches ..., field by field" event

    def result(self) -> CellResult:
        self.findings = ranked(self.findings)
        verdict, expected = verdict_of(self.findings)
        detail = headline(self.findings)
        if self.matched is not None and not expected:
            others = [f.kind for f in self.findings if not f.expected and f.verdict != "ok"]
            said = self.timeline[self.matched]
            self.timeline[self.matched] = said._replace(
                text=f"{said.text}; the verdict comes from what else was found: "
                f"{', '.join(dict.fromkeys(others))}"
            )
        self.event(
            f"verdict: {verdict}, {'expected' if expected else 'unexpected'}"
            + (f": {detail}" if detail else "")
        )
        tails = (
            "".join(log_tail(self.work, w.spec.log_name) for w in self.workers) if self.work else ""
        )
        return CellResult(
            id=self.cell.id,
            runtime=self.cell.runtime,
            scenario=self.cell.scenario,
            mode=self.cell.mode,
            store=self.cell.store,
            schedule=[str(p) for p in self.cell.schedule],
            verdict=verdict,
            expected=expected,
            duplicates=self.duplicates,
            bound=sum(self.allowed.values()),
            detail=detail,
            findings=[f.to_json() for f in self.findings],
            sides={"expected": self.sides.expected, "actual": self.sides.actual},
            diff=self.diff,
            store_at_crash=(
                {**(self.store_at_crash or {}), **self.kind_evidence}
                if self.kind_evidence
                else self.store_at_crash
            ),
            stderr_tail=tails[-4000:],
            timeline=self.timeline,
            exit_codes=[w.exitcode for w in self.workers],
            replay=self.cell.replay_command(self.options()),
        )

    def cleanup(self, expected: bool, cut_short: bool = False) -> Path | None:
        """Stop what is left of the cell; returns its work folder if that is kept. A cell
        `cut_short` by an interrupt is in no report, so nothing of it is kept."""
        self.caller.close()
        for w in self.workers:
            if w.alive:
                w.kill()
        if self.workers:
            # What its workers left running (children that called setsid, or stayed in
            # a group whose leader exited) dies with the cell.
            kill_left_behind()
        keep = self.engine.config.keep
        wanted = not cut_short and (keep == "all" or (keep == "failed" and not expected))
        kept = self.work if wanted else None
        if self.url:
            if kept is not None:
                # A store outside the folder (a PostgreSQL schema) stays with it; the
                # folder says where it is.
                self.engine.keep_store(self.url, kept)
            else:
                self.engine.forget_store(self.url)
        if self.work is not None:
            self.engine.settle_folder(self.work, keep=kept is not None)
        return kept


class BoundedStores:
    """The store backend as a cell's kind uses it: each call that asks the server
    something is made within the cell's time limit (past it, the cell is `unavailable`)."""

    # Their own limits (a restart waits for the server as long as it takes), or no I/O.
    UNBOUNDED = frozenset({"kind", "shown", "with_lock_timeout", "restart", "restart_problem"})

    def __init__(self, run: CellRun) -> None:
        self._run = run

    def __getattr__(self, name: str) -> Any:
        value = getattr(self._run.engine.stores, name)
        if name in self.UNBOUNDED or not callable(value):
            return value

        def bounded(*args: Any) -> Any:
            return self._run.call(f"the store's {name}()", value, *args, dependency=True)

        return bounded


def at_checkpoint(plan: Plan) -> bool:
    """The point is armed at a checkpoint's own gate: the adapter numbers writes in the
    order they land, so the count there is exact even when writes lag the run."""
    return any((g := gates.parse(name)) is not None and g.kind == "checkpoint" for name in plan.arm)


def announced(worker: Worker) -> tuple[int, int]:
    """(highest checkpoint announced landed, highest begun) by a worker that traces its
    writes; its offset when it announced none."""
    landed = begun = worker.spec.checkpoint_offset
    for name in worker.trace:
        gate = gates.parse(name)
        if gate is None or gate.kind != "checkpoint" or gate.number is None:
            continue
        if gate.phase == "landed":
            landed = max(landed, gate.number)
        elif gate.phase == "writing":
            begun = max(begun, gate.number)
    return landed, begun


def ledger_lines(entries: Sequence[ledger_mod.Entry], zero: float) -> dict[Signature, list[str]]:
    """Per call, the ledger's records of its effects, as evidence lines, each at its time
    on the cell's clock (`zero`: the cell's start, time.time()), the clock its timeline
    has: a line reads "+1.3 s" where the timeline's events around it do."""
    lines: dict[Signature, list[str]] = {}
    for e in entries:
        if e.phase == "started" and e.effect:
            key = f", key {e.key}" if e.key else ""
            lines.setdefault(e.effect_signature, []).append(
                f"{e.tool} started by pid {e.pid} at {offset(e.at - zero)}{key}"
            )
    return lines


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


def log_tail(work: Path | None, log_name: str, lines: int = LOG_TAIL_LINES) -> str:
    if work is None:
        return ""
    try:  # only the end of the file: a worker may have written hundreds of megabytes
        with open(work / f"{log_name}.log", "rb") as f:
            f.seek(max(0, f.seek(0, os.SEEK_END) - LOG_TAIL_BYTES))
            text = f.read(LOG_TAIL_BYTES).decode("utf-8", "replace")
    except FileNotFoundError:
        return ""
    tail = "\n".join(line[-LOG_LINE_CHARS:] for line in text.splitlines()[-lines:])
    return f"\n--- {log_name} stderr ---\n{tail}" if tail else ""


__all__ = ["BoundedStores", "CellOver", "CellRun", "log_tail", "summary"]
