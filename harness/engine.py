"""The crash engine: baselines, then each cell: crash, inspect, resume, compare, verdict.

The engine does not know pytest exists; the CLI and the pytest plugin share it.
"""

from __future__ import annotations

import shutil
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from killpoint.scenarios import Fault, gates
from killpoint.scenarios import ledger as ledger_mod
from killpoint.scenarios.conversation import canonical_arguments

from .adapter import RuntimeAdapter, load_adapter
from .baseline import Baseline, Plan, effects
from .cell import Cell, CellResult
from .normal_form import NormalFormError, exclude, validate_session
from .oracle import comparable, count_effects, first_difference
from .points import CrashPoint, PointError
from .processes import Interrupted, Outcome, Worker, context
from .stores import Stores
from .targets import resolve_scenario
from .timeline import Event
from .work_root import make_work_root
from .worker import LEDGER, WorkerSpec

SESSION_ID = "killpoint-session"
SIGSTOP_LEASE = 0.3  # seconds: short, so the takeover after a pause waits little
LOCK_WAIT = 0.1  # seconds a worker waits for a held write lock before its write fails


@dataclass
class EngineConfig:
    store: str = "sqlite"
    timeout: float = 30.0  # per worker
    confirm_timeout: float = 5.0
    keep: str = "failed"  # none | failed | all
    work_root: Path | None = None  # the cells' folders go right here
    work_parent: Path | None = None  # or in a new killpoint-* folder here (work_root.py)
    lease_seconds: float = 30.0


class Engine:
    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.stores = Stores(config.store)
        self.work_root = config.work_root or make_work_root(self, config.work_parent)
        self.work_root.mkdir(parents=True, exist_ok=True)
        self._baselines: dict[tuple[str, str, str, str], Baseline] = {}
        self._locks: dict[tuple[str, str, str, str], threading.Lock] = {}
        self._lock = threading.Lock()
        self._adapters: dict[str, RuntimeAdapter] = {}
        self.stopping = threading.Event()
        self._serial = 0

    def read_session(self, runtime: str, url: str) -> dict[str, Any] | None:
        """The session in the normal form, checked, without the adapter's excluded keys."""
        adapter = self.adapter(runtime)
        session = adapter.read_session(url, SESSION_ID)
        validate_session(session, f"runtime {runtime!r}: read_session")
        return exclude(session, adapter.excluded)

    def adapter(self, runtime: str) -> RuntimeAdapter:
        with self._lock:
            if runtime not in self._adapters:
                adapter = self._adapters[runtime] = load_adapter(runtime)
                # Before any worker starts: the forkserver then preloads this runtime.
                context(adapter.preload_modules)
            return self._adapters[runtime]

    def _work_dir(self, label: str) -> Path:
        with self._lock:
            self._serial += 1
            serial = self._serial
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in label)[:120]
        path = self.work_root / f"{serial:05d}-{safe}"
        path.mkdir(parents=True)
        return path

    # -- baselines ----------------------------------------------------------------------

    def baseline(self, row: tuple[str, str, str, str]) -> Baseline:
        """Run once per row (cached), twice over: two baselines that differ fail the row."""
        with self._lock:
            lock = self._locks.setdefault(row, threading.Lock())
        with lock:
            if row not in self._baselines:
                self._baselines[row] = self._make_baseline(row)
            return self._baselines[row]

    def adopt_baseline(self, base: Baseline) -> None:
        """Use a baseline made by another process (the pytest-xdist controller) for its row."""
        row = (base.runtime, base.scenario, base.mode, base.store)
        with self._lock:
            self._baselines[row] = base

    def _make_baseline(self, row: tuple[str, str, str, str]) -> Baseline:
        _runtime, _scenario, _mode, _store = row
        t0 = time.monotonic()
        first = self._run_baseline(row)
        second = self._run_baseline(row)
        base = first
        if base.problem is None and second.problem is None:
            diff = first_difference(comparable(first.session), comparable(second.session))
            if diff is None and first.effects != second.effects:
                diff_text = f"side effects differ: {dict(first.effects)} vs {dict(second.effects)}"
            else:
                diff_text = str(diff) if diff else None
            if diff_text:
                base.nondeterministic = f"scenario is not deterministic: {diff_text}"
        elif base.problem is None:
            base.problem = second.problem
        base.seconds = time.monotonic() - t0
        base.analyse()
        return base

    def _run_baseline(self, row: tuple[str, str, str, str]) -> Baseline:
        runtime, scenario, mode, store = row
        base = Baseline(runtime, scenario, mode, store)
        work = self._work_dir(f"baseline-{runtime}-{scenario}-{mode}")
        url = self.stores.fresh(work)
        timeline: list[Event] = []
        try:
            w = Worker(
                self._spec(row, url, work, trace=True, log_name="baseline"),
                timeline,
                time.monotonic(),
                self.stopping,
            )
            out = w.join(time.monotonic() + self.config.timeout)
            base.trace = w.trace
            base.results = out.results
            if out.kind != "done":
                base.problem = f"the baseline run failed ({out.kind}): {out.detail}" + _tail(
                    work, "baseline"
                )
                base.problem_verdict = "hung" if out.kind == "timeout" else "missed"
                return base
            try:
                base.session = self.read_session(runtime, url)
            except NormalFormError as exc:
                base.problem = str(exc)
                return base
            base.effects = effects(ledger_mod.read(work / LEDGER))
            problems = _acknowledged(w.acks, base.session)
            if problems:
                base.problem = (
                    "the baseline acknowledged what its store does not hold: " + "; ".join(problems)
                )
                base.problem_verdict = "lost"
            return base
        finally:
            self.stores.drop(url)
            if self.config.keep != "all":
                shutil.rmtree(work, ignore_errors=True)

    def _spec(
        self, row: tuple[str, str, str, str], url: str, work: Path, **kwargs: Any
    ) -> WorkerSpec:
        runtime, scenario, mode, _ = row
        self.adapter(runtime)  # loaded before its first worker forks (see adapter())
        kwargs.setdefault("lease_seconds", self.config.lease_seconds)
        return WorkerSpec(
            runtime=runtime,
            scenario=scenario,
            mode=mode,
            store_url=url,
            work_dir=str(work),
            session_id=SESSION_ID,
            **kwargs,
        )

    # -- cells --------------------------------------------------------------------------

    def run_cell(self, cell: Cell) -> CellResult:
        t0 = time.monotonic()
        run = _CellRun(self, cell, t0)
        try:
            result = run.execute()
        except Interrupted:
            raise
        except (PointError, NormalFormError) as exc:
            result = run.result("missed", False, detail=str(exc))
        finally:
            kept = run.cleanup()
        result.seconds = round(time.monotonic() - t0, 4)
        result.kept = str(kept) if kept else None
        return result


def _tail(work: Path, log_name: str, lines: int = 25) -> str:
    try:
        text = (work / f"{log_name}.log").read_text(errors="replace")
    except FileNotFoundError:
        return ""
    tail = "\n".join(text.splitlines()[-lines:])
    return f"\n--- {log_name} stderr ---\n{tail}" if tail else ""


def _acknowledged(acks: list[dict[str, Any]], session: dict[str, Any] | None) -> list[str]:
    """Every status a worker returned to its caller must be in the store."""
    runs = (session or {}).get("runs", {})
    problems = []
    for ack in acks:
        stored = runs.get(ack["run_id"])
        if stored is None:
            problems.append(f"run {ack['run_id']} returned {ack['status']} but is not in the store")
        elif ack["status"] in ("COMPLETED", "CANCELLED") and stored["status"] != ack["status"]:
            problems.append(
                f"run {ack['run_id']} returned {ack['status']} but the store says {stored['status']}"
            )
    return problems


def _summary(session: dict[str, Any] | None, checkpoints: int) -> dict[str, Any]:
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


@dataclass
class _CellRun:
    engine: Engine
    cell: Cell
    t0: float
    timeline: list[Event] = field(default_factory=list)
    workers: list[Worker] = field(default_factory=list)
    work: Path | None = None
    url: str | None = None
    store_at_crash: dict[str, Any] | None = None
    verdict_ok: bool = False
    bound: int = 0  # duplicate effects the crashes so far allow

    @property
    def adapter(self) -> RuntimeAdapter:
        return self.engine.adapter(self.cell.runtime)

    def read(self) -> dict[str, Any] | None:
        assert self.url is not None
        return self.engine.read_session(self.cell.runtime, self.url)

    def event(self, text: str, kind: str = "other", lane: str = "harness") -> None:
        self.timeline.append(Event(round(time.monotonic() - self.t0, 4), text, kind, lane))

    def fault(self, text: str) -> None:
        self.event(text, "fault", "faults")

    def deadline(self) -> float:
        return time.monotonic() + self.engine.config.timeout

    def start(self, log_name: str, **kwargs: Any) -> Worker:
        assert self.work is not None and self.url is not None
        url = kwargs.pop("store_url", self.url)
        spec = self.engine._spec(self.cell.row, url, self.work, log_name=log_name, **kwargs)
        w = Worker(spec, self.timeline, self.t0, self.engine.stopping)
        self.workers.append(w)
        return w

    def result(self, verdict: str, expected: bool, **kwargs: Any) -> CellResult:
        self.verdict_ok = expected
        tails = (
            "".join(_tail(self.work, w.spec.log_name) for w in self.workers) if self.work else ""
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
            store_at_crash=self.store_at_crash,
            stderr_tail=tails[-4000:],
            timeline=self.timeline,
            exit_codes=[w.exitcode for w in self.workers],
            replay=self.cell.replay_command(),
            **kwargs,
        )

    def cleanup(self) -> Path | None:
        """Stop what is left of the cell; returns its work folder if that is kept."""
        for w in self.workers:
            if w.alive:
                w.kill()
        if self.url:
            self.engine.stores.drop(self.url)
        keep = self.engine.config.keep
        if self.work and (keep == "none" or (keep == "failed" and self.verdict_ok)):
            shutil.rmtree(self.work, ignore_errors=True)
            return None
        return self.work

    # -- the cell -----------------------------------------------------------------------

    def execute(self) -> CellResult:
        cell = self.cell
        base = self.engine.baseline(cell.row)
        if base.problem:
            return self.result(base.problem_verdict, False, detail=base.problem)
        if base.nondeterministic:
            return self.result("diverged", False, detail=base.nondeterministic)
        first = cell.schedule[0]
        plan = base.plan(first)
        self.work = self.engine._work_dir(cell.id)
        self.url = self.engine.stores.fresh(self.work)
        self.event(f"plan: {first} — {plan.checkpoints} checkpoint(s) durable at the point")

        if first.kind in ("model-500", "model-timeout"):
            kind = "500" if first.kind == "model-500" else "timeout"
            w = self.start("worker", faults=(Fault(turn=first.k, kind=kind),))
            out = w.join(self.deadline())
            if out.kind == "timeout":
                return self.result("hung", False, detail=out.detail)
            self.event(f"first worker ended: {out.kind} {out.detail}".strip(), "end", "worker")
            return self.after_crash(base, plan, [w], rest=cell.schedule[1:])

        if first.kind == "lock-held":
            return self.lock_held(base, plan)

        paused = first.kind == "sigstop"
        w = self.start(
            "worker",
            gates=plan.arm,
            release=paused,
            **({"lease_seconds": SIGSTOP_LEASE} if paused else {}),
        )
        reached = self.reach(w, plan)
        if reached is not None:
            return reached
        if first.kind == "sigstop":
            return self.sigstop(base, plan, w)
        w.kill()
        return self.after_crash(base, plan, [w], rest=cell.schedule[1:], killed=True)

    def reach(self, w: Worker, plan: Plan, offset_note: str = "") -> CellResult | None:
        """Wait for the worker to announce the point, then confirm it in the store.
        Returns a verdict when the point cannot be reached exactly."""
        out = w.wait(plan.wait_for, self.deadline())
        if out.kind == "timeout":
            w.kill()
            return self.result("hung", False, detail=f"{plan.point}: {out.detail}")
        if out.kind != "gates":
            w.kill()
            return self.result(
                "missed",
                False,
                detail=f"the worker ended ({out.kind}) before reaching {plan.point}: {out.detail}",
            )
        assert self.url is not None

        def there() -> bool:
            if self.adapter.progress(self.url, SESSION_ID) != plan.checkpoints:
                return False
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

        if not _poll(there, self.engine.config.confirm_timeout, self.engine.stopping):
            held = self.adapter.progress(self.url, SESSION_ID)
            w.kill()
            self.store_at_crash = _summary(self.read(), held)
            return self.result(
                "corrupt",
                False,
                detail=f"at {plan.point}{offset_note} the store held {held} checkpoint(s); "
                f"the baseline held {plan.checkpoints} there",
            )
        confirmed = f"store confirms {plan.checkpoints} checkpoint(s) at {plan.point}"
        self.event(confirmed, "store", "store")
        return None

    def count_in_flight(
        self, session: dict[str, Any] | None = None, entries: list[ledger_mod.Entry] | None = None
    ) -> None:
        """At a crash (or a pause): calls whose effect happened but whose result is not
        durable. A resume may repeat each of them once, and nothing else: that is the
        duplicate bound, in every mode ("tool" mode simply leaves fewer such calls)."""
        assert self.url is not None
        happened = effects(self.ledger() if entries is None else entries)
        if session is None:
            session = self.read()
        durable = durable_results(session)
        in_flight = sum((happened - durable).values())
        self.bound += in_flight
        self.event(f"{in_flight} call(s) in flight without a durable result")

    def next_step(self, plan: Plan, session: dict[str, Any] | None) -> dict[str, Any] | CellResult:
        """What a fresh worker must do after the crash: continue run i, start run i+1,
        nothing (the session is finished), or a verdict (the run is gone)."""
        runs = list((session or {}).get("runs", {}).values())
        i = plan.run_index
        if i >= len(runs):
            expected = plan.expects_loss
            landed = plan.checkpoints - plan.run_started_at
            detail = f"run {i + 1} is not in the store after the crash" + (
                " (no checkpoint of it had landed)"
                if expected
                else f" although {landed} checkpoint(s) of it had landed"
            )
            return self.result("lost", expected, detail=detail)
        status = runs[i]["status"]
        if status == "CANCELLED":
            return {}
        if status == "COMPLETED":
            inputs = len(resolve_scenario(self.cell.scenario).inputs)
            return {} if i + 1 >= inputs else {"start_at": i + 1}
        return {"resume_at": i}

    def after_crash(
        self,
        base: Baseline,
        plan: Plan,
        crashed: list[Worker],
        rest: tuple[CrashPoint, ...],
        killed: bool = False,
    ) -> CellResult:
        assert self.url is not None and self.work is not None
        held = self.adapter.progress(self.url, SESSION_ID)
        session = self.read()
        if self.store_at_crash is None:
            self.store_at_crash = _summary(session, held)
        if killed:
            self.count_in_flight(session)
        problems = self.adapter.inspect(self.url, SESSION_ID)
        if problems:
            self.fault("inspect: " + "; ".join(problems))
            return self.result("corrupt", False, detail="; ".join(problems))
        acked = _acknowledged([a for w in crashed for a in w.acks], session)
        if acked:
            return self.result("lost", False, detail="; ".join(acked))
        self.event("inspect: store sound", "store", "store")

        step = self.next_step(plan, session)
        if isinstance(step, CellResult):
            return step
        if step and self.cell.schedule[0].kind == "double-resume":
            refused = self.double_resume(step)
            if refused is not None:
                return refused
        elif step and rest:
            return self.crash_again(base, step, held, rest)
        elif step:
            w2 = self.start("resumer", checkpoint_offset=held, **step)
            out = w2.join(self.deadline())
            if out.kind == "timeout":
                return self.result("hung", False, detail=out.detail)
            if out.kind != "done":
                return self.result(
                    "unresumable", False, detail=f"the resumed run failed: {out.detail}"
                )
        return self.compare(base)

    def crash_again(
        self, base: Baseline, step: dict[str, Any], held: int, rest: tuple[CrashPoint, ...]
    ) -> CellResult:
        """Depth 2: crash the resumed worker too, at a point of its own."""
        plan = base.plan(rest[0])
        w = self.start("resumer", gates=plan.arm, checkpoint_offset=held, **step)
        # Reached and confirmed in the store as the first point was.
        reached = self.reach(w, plan, offset_note=" (the second crash)")
        if reached is not None:
            return reached
        w.kill()
        return self.after_crash(base, plan, [w], rest=rest[1:], killed=True)

    def double_resume(self, step: dict[str, Any]) -> CellResult | None:
        if "resume_at" in step:
            gate = gates.run_gate(step["resume_at"] + 1, "resume")
        else:
            gate = gates.run_gate(step["start_at"] + 1, "start")
        a = self.start("resumer-a", gates=(gate,), release=True, **step)
        b = self.start("resumer-b", gates=(gate,), release=True, **step)
        for w in (a, b):
            out = w.wait(frozenset({gate}), self.deadline())
            if out.kind != "gates":
                return self.result(
                    "missed", False, detail=f"{w.spec.log_name} never began: {out.detail}"
                )
        # Released together: both race for the run from here.
        a.release(gate)
        b.release(gate)
        outs = [w.join(self.deadline()) for w in (a, b)]
        if any(o.kind == "timeout" for o in outs):
            return self.result("hung", False, detail="a resumer passed its time limit")
        drove = [o for o in outs if o.kind == "done"]
        if len(drove) == 2:
            return self.result("duplicated", False, detail="both resumers drove the run")
        if not drove:
            return self.result(
                "unresumable",
                False,
                detail="neither resumer drove the run: " + " | ".join(o.detail for o in outs),
            )
        loser = next(o for o in outs if o.kind != "done")
        self.fault(f"the other resumer was refused: {loser.detail}")
        return None

    def sigstop(self, base: Baseline, plan: Plan, a: Worker) -> CellResult:
        assert self.url is not None
        gate = next(iter(plan.wait_for))
        a.stop()
        a.release(gate)  # read once it is woken
        paused = self.read()
        # One reading of the ledger for both: an effect that lands between two readings
        # (SIGSTOP is delivered asynchronously) would be in neither the bound nor `late`.
        at_pause = self.ledger()
        self.count_in_flight(paused, at_pause)
        effects_before = effects([e for e in at_pause if e.pid == a.pid])
        deadline = self.adapter.lease_deadline(self.url, SESSION_ID)
        if deadline is not None:
            # Waiting on the row's lease, not on a process: the takeover is legal from then.
            self.fault("waiting for the paused worker's lease to expire")
            while time.time() < deadline:
                time.sleep(max(0.0, deadline - time.time()) + 0.001)
        held = self.adapter.progress(self.url, SESSION_ID)
        session = self.read()
        self.store_at_crash = _summary(session, held)
        step = self.next_step(plan, session)
        if isinstance(step, CellResult):
            return step
        b = self.start("resumer", checkpoint_offset=held, **step)
        out = b.join(self.deadline())
        if out.kind == "timeout":
            return self.result("hung", False, detail=out.detail)
        if out.kind != "done":
            return self.result("unresumable", False, detail=f"the takeover failed: {out.detail}")
        taken = comparable(self.read())
        a.cont()
        woke = a.join(self.deadline())
        if woke.kind == "timeout":
            return self.result("hung", False, detail="the woken worker did not stop")
        after = comparable(self.read())
        diff = first_difference(taken, after)
        if diff is not None:
            return self.result(
                "corrupt",
                False,
                detail=f"the stale worker wrote after the takeover: {diff}",
                first_difference=diff.to_json(),
            )
        if woke.kind == "done":
            return self.result(
                "corrupt", False, detail="the stale worker finished its run after the takeover"
            )
        self.fault(f"stale worker rejected: {woke.detail}")
        late = late_allowance(
            unfinished_batch(paused),
            started=effects_before - durable_results(paused),
            late=effects([e for e in self.ledger() if e.pid == a.pid]) - effects_before,
        )
        if late:
            self.bound += late
            self.event(
                f"the woken worker finished {late} call(s) of its unfinished batch "
                "(dispatched before the pause; each may repeat once)"
            )
        return self.compare(base)

    def ledger(self) -> list[ledger_mod.Entry]:
        """Every tool execution the cell's workers recorded so far."""
        assert self.work is not None
        return ledger_mod.read(self.work / LEDGER)

    def lock_held(self, base: Baseline, plan: Plan) -> CellResult:
        """Checkpoint k meets a write lock held by another connection: the worker's write
        must fail (it waits only LOCK_WAIT), nothing half-written may remain, and a
        fresh worker continues the run once the lock is gone."""
        assert self.url is not None
        gate = next(iter(plan.wait_for))
        impatient = self.engine.stores.with_lock_timeout(self.url, LOCK_WAIT)
        w = self.start("worker", gates=plan.arm, release=True, store_url=impatient)
        reached = self.reach(w, plan)
        if reached is not None:
            return reached
        release = self.engine.stores.hold_write_lock(self.url)
        self.fault("another connection holds the store's write lock")
        try:
            w.release(gate)
            # The worker ends on its own: its write gives up after LOCK_WAIT.
            out = w.join(self.deadline())
        finally:
            release()
        self.event(f"write lock released; the worker ended ({out.kind}) {out.detail}".strip())
        if out.kind == "timeout":
            return self.result("hung", False, detail=out.detail)
        return self.after_crash(base, plan, [w], rest=(), killed=True)

    def compare(self, base: Baseline) -> CellResult:
        assert self.url is not None
        final = self.read()
        diff = first_difference(comparable(base.session), comparable(final))
        counted = count_effects(base.effects, effects(self.ledger()))
        bound = self.bound
        common = {"duplicates": counted.duplicates, "bound": bound}
        if diff is not None:
            return self.result(
                "diverged", False, detail=str(diff), first_difference=diff.to_json(), **common
            )
        if counted.missing:
            return self.result(
                "diverged",
                False,
                detail=f"side effects lost: {counted.missing}",
                **common,
            )
        if counted.foreign:
            shown = ", ".join(f"{t}({a}) x{n}" for t, a, n in counted.foreign)
            return self.result(
                "diverged", False, detail=f"side effects the baseline never had: {shown}", **common
            )
        if counted.duplicates > bound:
            shown = ", ".join(f"{t}({a}) x{n}" for t, a, n in counted.repeated)
            return self.result(
                "duplicated",
                False,
                detail=f"{counted.duplicates} duplicate effect(s), bound {bound}: {shown}",
                **common,
            )
        self.event("resumed run equals the baseline")
        return self.result("ok", True, **common)


def unfinished_batch(session: dict[str, Any] | None) -> Counter[tuple[str, str]]:
    """The calls of each run's newest tool batch that have no durable result, per (tool,
    canonical arguments): what a paused worker may still have running in its threads."""
    found: Counter[tuple[str, str]] = Counter()
    for run in (session or {}).get("runs", {}).values():
        turns = [m for m in run["messages"] if m["role"] == "assistant"]
        if not turns or not turns[-1]["tool_calls"]:
            continue
        turn = len(turns)
        done = {(e["turn"], e["call_index"]) for e in run["tool_executions"]}
        for index, call in enumerate(turns[-1]["tool_calls"]):
            if (turn, index) not in done:
                found[(call["name"], canonical_arguments(call["arguments"]))] += 1
    return found


def late_allowance(
    unfinished: Counter[tuple[str, str]],
    *,
    started: Counter[tuple[str, str]],
    late: Counter[tuple[str, str]],
) -> int:
    """How many of a woken stale worker's effects after its pause (`late`) were calls of
    its unfinished batch that it had not started by then (`started`: its effects without
    a durable result at the pause). A tool call dispatched before the pause cannot be
    recalled, so each may repeat once, like a call in flight at a crash; anything else it
    ran after waking (a new batch: a missing fence) stays outside the bound."""
    return sum((late & (unfinished - started)).values())


def durable_results(session: dict[str, Any] | None) -> Counter[tuple[str, str]]:
    """Tool results the store holds, per (tool, canonical arguments)."""
    found: Counter[tuple[str, str]] = Counter()
    for run in (session or {}).get("runs", {}).values():
        for e in run["tool_executions"]:
            found[(e["name"], canonical_arguments(e["arguments"]))] += 1
    return found


def _poll(predicate: Callable[[], bool], timeout: float, stop: threading.Event) -> bool:
    """Wait on the store: check, back off briefly, check again (the worker is parked at
    its gate, so the state being waited for is about to hold or never will)."""
    end = time.monotonic() + timeout
    pause = 0.0005
    while True:
        if predicate():
            return True
        if time.monotonic() >= end or stop.is_set():
            return False
        stop.wait(pause)
        pause = min(pause * 2, 0.02)


def agent_adapter(factory: Callable[..., Any], *, name: str | None = None) -> RuntimeAdapter:
    """A reference-runtime adapter whose agent is the user's own, built by `factory`.

    `factory` is called in each worker with the keyword arguments the reference driver
    gives `runtime.Agent` (name, model, db, tools, instructions, checkpoint,
    lease_seconds) and returns an `Agent` (or a subclass). Use it as a decorator or
    assign its result in a module; `package.module:name` is then a runtime for
    `killpoint matrix --runtime`, `killpoint replay` and the pytest plugin. The
    result still builds agents when called. Lives here, not in the pytest plugin, so
    that workers and the CLI never import pytest.
    """
    from .adapters.reference import ReferenceAdapter, ReferenceDriver

    class Driver(ReferenceDriver):
        def __init__(self, scenario: Any, store: Any, mode: str, ledger: Any, **kw: Any) -> None:
            super().__init__(scenario, store, mode, ledger, **kw)
            ref = self.agent  # built from the scenario: its model, store and tools
            self.agent = factory(
                name=ref.name,
                model=ref.model,
                db=ref.db,
                tools=ref.tools,
                instructions=ref.instructions,
                checkpoint=ref.checkpoint,
                lease_seconds=ref.lease_seconds,
            )

    class FactoryAdapter(ReferenceAdapter):
        driver_class = Driver

        def __call__(self, **kwargs: Any) -> Any:
            return factory(**kwargs)

        def __repr__(self) -> str:
            return f"agent_adapter({getattr(factory, '__qualname__', factory)!r})"

    adapter = FactoryAdapter()
    adapter.name = name or getattr(factory, "__name__", "agent")
    adapter.factory = factory  # type: ignore[attr-defined]
    return adapter


__all__ = ["SESSION_ID", "Engine", "EngineConfig", "Interrupted", "Outcome", "agent_adapter"]
