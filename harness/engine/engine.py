"""The crash engine: baselines (each row run twice, cached), then cells, each run by a
CellRun through its crash-point kind, its findings turned into a verdict.

The engine does not know pytest exists; the CLI and the pytest plugin share it.
"""

from __future__ import annotations

import shutil
import threading
import time
import traceback
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from killpoint.adapters.blame import charged, checked_session
from killpoint.adapters.factory import agent_adapter
from killpoint.adapters.protocol import RuntimeAdapter
from killpoint.adapters.registry import load_adapter
from killpoint.engine.cell_host import CrashWatcher
from killpoint.engine.cell_run import CellRun, log_tail
from killpoint.engine.deadline import Caller
from killpoint.engine.options import EngineConfig
from killpoint.engine.row_trace import Trace, trace_row
from killpoint.engine.slots import Slots
from killpoint.engine.state_copy import Copy
from killpoint.engine.work_root import default_parent, make_work_root, mark_kept, sweep_orphans
from killpoint.errors import (
    AdapterFault,
    Interrupted,
    NormalFormError,
    Overdue,
    PointError,
    StoreLeftover,
)
from killpoint.judge import cassette, contract, expectations
from killpoint.judge import history as history_rules
from killpoint.judge.baseline import Baseline, effects
from killpoint.judge.contract import acknowledged
from killpoint.judge.durability import settings_findings
from killpoint.judge.mode_check import check_mode
from killpoint.judge.oracle import comparable, first_difference
from killpoint.kinds import one_trace_only
from killpoint.redaction import redact_folder
from killpoint.scenarios import history
from killpoint.scenarios import ledger as ledger_mod
from killpoint.scenarios.model import SERVED_LOG, requested_turns, turn_log
from killpoint.stores import backend_for, per_url, store_kind
from killpoint.stores.outage import FULL_BELOW, Watch
from killpoint.stores.sampling import Sampler
from killpoint.values.cell import Cell, CellResult, Row
from killpoint.values.findings import NO_CRASH, Finding
from killpoint.values.modes import find
from killpoint.values.normal_form import exclude
from killpoint.values.points import CrashPoint
from killpoint.values.scenario_refs import resolve_scenario
from killpoint.values.sentences import count
from killpoint.workers.limits import exhausted, refusals
from killpoint.workers.processes import Outcome, Worker, context, kill_left_behind
from killpoint.workers.raised_where import ADAPTER_STAGES, RUN
from killpoint.workers.worker import LEDGER, MODEL_STATE, WorkerSpec

if TYPE_CHECKING:
    from killpoint.powerloss import PowerLossFS

SESSION_ID = "killpoint-session"
# A kept worker log is cut to this size (head and tail), and kept text files are masked up to it.
KEPT_TEXT_LIMIT = 4 * 1024 * 1024


class Engine:
    session_id = SESSION_ID

    def __init__(self, config: EngineConfig) -> None:
        self.config = config
        self.stores = backend_for(config.store)
        # Folders that killed campaigns left where this one makes its own: swept first.
        self.swept: list[Path] = []
        if config.work_root is None:
            parent = config.work_parent or default_parent()
            self.swept = sweep_orphans(parent)
        self.work_root = config.work_root or make_work_root(self, config.work_parent)
        self.work_root.mkdir(parents=True, exist_ok=True)
        self._baselines: dict[Row, Baseline] = {}
        self._locks: dict[Row, threading.Lock] = {}
        self._lock = threading.Lock()
        self._adapters: dict[str, RuntimeAdapter] = {}
        self.stopping = threading.Event()
        # Told of each cell's first crash (a crash-state corpus keeps the state there).
        self.watchers: list[CrashWatcher] = []
        # Cells at work at once: a campaign's --workers; a cell replayed alone waits for none.
        self.slots = Slots(config.workers, self.stopping)
        self._serial = 0
        # Folders work_dir made whose fate is not settled yet (kept, or removed for good):
        # what sweep() removes once no worker runs.
        self._unsettled: set[Path] = set()
        # The kept folder of each row's failed baseline run (its baseline.log): the cell
        # that carries the row's failure names it as a cell names its own kept folder.
        self.baseline_folders: dict[Row, Path] = {}
        # Stores that could not be dropped when their cell ended: retried at the end.
        self.leftovers: dict[str, StoreLeftover] = {}
        # Free space and the server's answers, looked at while cells run (from the first
        # watch on; its threads stop with the engine).
        self.sampler = Sampler(self.stores, self.work_root, FULL_BELOW)
        weakref.finalize(self, self.sampler.close)

    # -- runtimes and stores --------------------------------------------------------------

    def adapter(self, runtime: str) -> RuntimeAdapter:
        with self._lock:
            if runtime not in self._adapters:
                adapter = self._adapters[runtime] = load_adapter(runtime)
                # Before any worker starts: the forkserver then preloads this runtime.
                context(adapter.preload_modules)
            return self._adapters[runtime]

    def read_session(self, runtime: str, url: str) -> dict[str, Any] | None:
        """The session in the normal form, checked, without the adapter's excluded keys."""
        adapter = self.adapter(runtime)
        session = charged("read_session()", adapter.read_session)(url, SESSION_ID)
        checked_session(session, runtime)
        checked: dict[str, Any] | None = exclude(session, adapter.excluded)
        return checked

    def keep_store(self, url: str, work: Path) -> None:
        """A kept cell's store stays: the engine's connections to it close, and a store
        outside the folder is named in it (StoreBackend.keep)."""
        per_url.release(url)
        try:
            self.stores.keep(url, work)
        except OSError:
            # The folder cannot name it (its disk is full): a store named nowhere would be
            # left on the server for good, so it goes, and the folder keeps the rest.
            self._drop(url)

    def forget_store(self, url: str) -> None:
        """A baseline or cell is done with its store: remove it (a PostgreSQL schema; a
        SQLite file goes with its folder), after every connection the engine holds to it."""
        per_url.release(url)
        self._drop(url)

    def _drop(self, url: str) -> None:
        try:
            self.stores.drop(url)
        except StoreLeftover as exc:
            with self._lock:
                self.leftovers[url] = exc

    def retry_leftovers(self) -> list[StoreLeftover]:
        """At a campaign's end: drop again each store that could not be dropped when its
        cell ended; the ones that stay, each with the statement that drops it."""
        with self._lock:
            left, self.leftovers = self.leftovers, {}
        for url in left:
            self._drop(url)
        with self._lock:
            return list(self.leftovers.values())

    def work_dir(self, label: str) -> Path:
        with self._lock:
            self._serial += 1
            serial = self._serial
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in label)[:120]
        path = self.work_root / f"{serial:05d}-{safe}"
        path.mkdir(parents=True)
        with self._lock:
            self._unsettled.add(path)
        return path

    def settle_folder(self, path: Path, keep: bool) -> None:
        """A folder from work_dir is done with: kept, or removed. One that is still there
        after its removal (a file landed in it meanwhile) stays unsettled for sweep()."""
        if not keep:
            shutil.rmtree(path, ignore_errors=True)
            if path.exists():
                return
        else:  # what a worker printed may hold a secret (an API key, the store URL)
            redact_folder(path, KEPT_TEXT_LIMIT)
            mark_kept(path)
        with self._lock:
            self._unsettled.discard(path)

    def sweep(self) -> None:
        """Once no worker of this engine runs (a campaign's end, interrupted or not):
        remove every folder it made that was neither kept nor removed, whatever cut its
        cell short. A campaign leaves only the folders its results name."""
        kill_left_behind()  # what the workers left running, whatever ended their cells
        with self._lock:
            left, self._unsettled = self._unsettled, set()
        for path in left:
            shutil.rmtree(path, ignore_errors=True)

    def worker_spec(self, row: Row, url: str, work: Path, **kwargs: Any) -> WorkerSpec:
        runtime, scenario, mode, _ = row
        self.adapter(runtime)  # loaded before its first worker forks (see adapter())
        kwargs.setdefault("lease_seconds", self.config.lease_seconds)
        if self.config.model_behaviour is not None:
            kwargs.setdefault("model_behaviour", self.config.model_behaviour)
        return WorkerSpec(
            runtime=runtime,
            scenario=scenario,
            mode=mode,
            store_url=url,
            work_dir=str(work),
            session_id=SESSION_ID,
            **kwargs,
        )

    # -- baselines ------------------------------------------------------------------------

    def baseline(self, row: Row) -> Baseline:
        """Run once per row (cached), twice over: two baselines that differ fail the row."""
        with self._lock:
            lock = self._locks.setdefault(row, threading.Lock())
        with lock:
            if row not in self._baselines:
                watch = self.watch()
                try:
                    base = self._make_baseline(row)
                except Interrupted:
                    raise
                except Exception as exc:
                    # killpoint's own failure (the store server gone, the disk full): the
                    # row's cells say so, and the campaign goes on.
                    base = Baseline(*row)
                    base.problem = (
                        f"killpoint could not run the baseline: {type(exc).__name__}: {exc}"
                    )
                    base.problem_kind = "error"
                if base.problem and self.stopping.is_set():
                    # Either run cut short by the stop (its worker killed under it, its
                    # pipe closed): not a result, and the row is not planned.
                    raise Interrupted()
                settled = watch.settle([], base.problem or "", exhausted=exhausted)
                if settled:
                    # A dependency failed under it: not cached, the next cell tries again.
                    base.problem, base.problem_kind = settled[0].sentence, settled[0].kind
                    return base
                if base.problem_kind == "error" or base.outage:
                    return base  # not cached either
                self._baselines[row] = base
            return self._baselines[row]

    def watch(self) -> Watch:
        """The store server and the work folder, watched over one cell or baseline."""
        self.sampler.start()
        return Watch(self.stores, self.work_root, self.config.timeout, self.stopping, self.sampler)

    def adopt_baseline(self, base: Baseline) -> None:
        """Use a baseline made by another process (the pytest-xdist controller) for its row."""
        with self._lock:
            self._baselines[base.row] = base

    def _make_baseline(self, row: Row) -> Baseline:
        t0 = time.monotonic()
        self.baseline_folders.pop(row, None)  # a folder of an earlier try names no cell now
        first = self._run_baseline(row)
        # Its problem is the row's only when the first run had none: only then is its
        # folder the one to keep (a campaign keeps only the folders its results name).
        second = self._run_baseline(row, keep_failed=first.problem is None)
        base = first
        if base.problem is None and second.problem is None:
            diff = first_difference(comparable(first.session), comparable(second.session))
            diff_text: str | None
            if diff is None and first.effects != second.effects:
                diff_text = f"side effects differ: {dict(first.effects)} vs {dict(second.effects)}"
            else:
                diff_text = str(diff) if diff else None
            if diff_text:
                base.nondeterministic = f"scenario is not deterministic: {diff_text}"
        elif base.problem is None:
            base.problem, base.problem_kind = second.problem, second.problem_kind
        base.seconds = time.monotonic() - t0
        base.analyse()
        if base.problem is None and second.problem is None:
            base.other_trace = second.trace
            base.other_fs_ops = second.fs_ops
            base.trace_note = trace_note(base)
            mode = find(self.adapter(row[0]).modes, row[2])
            broken = check_mode(mode, [first.trace, second.trace]).problems if mode else ()
            if broken and base.nondeterministic is None:
                # The points are planned from the trace, the verdicts from the declaration:
                # a row that breaks it would have its kills called expected losses.
                base.problem, base.problem_kind = "; ".join(broken), "mode-broken"
        return base

    def _fs_traced(self) -> bool:
        """Whether baselines record the store's file-system operations (fs-op points are
        planned, the store is SQLite and the power-loss filesystem mounts here)."""
        if not self.config.fs_trace or store_kind(self.config.store) != "sqlite":
            return False
        from killpoint.powerloss import available

        return available() is None

    def _fs_history(self) -> bool:
        """Whether baselines run with the store on the power-loss filesystem so that the
        run's history holds the store files' writes and syncs (a SQLite store, FUSE here):
        the rule that nothing is returned before its commit is synced reads them."""
        if store_kind(self.config.store) != "sqlite":
            return False
        from killpoint.powerloss import available

        return available() is None

    def _run_baseline(self, row: Row, keep_failed: bool = True) -> Baseline:
        """One run of the row without a crash, read back and checked. `keep_failed`: a
        run that fails keeps its folder as a failed cell does (--keep failed)."""
        runtime, scenario, mode, _ = row
        base = self._new_baseline(row)
        run = BaselineRun(self.work_dir(f"baseline-{runtime}-{scenario}-{mode}"), keep_failed)
        run.caller = Caller(f"baseline-{scenario}"[:40], self.stopping)
        try:
            run.url = run.caller.call(
                "a new store (the store server)", self.config.timeout, self.stores.fresh, run.work
            )
        except Overdue as exc:
            run.caller.close()
            self.settle_folder(run.work, keep=False)
            base.problem, base.problem_kind = f"the store server: {exc}", "store-unavailable"
            return base
        try:
            out = self._drive_baseline(row, base, run)
            stale = cassette.stale(run.work / MODEL_STATE)
            if stale is not None:  # before anything else: it explains what went wrong
                base.problem, base.problem_kind = stale, "cassette-stale"
                return base
            if out.kind != "done":
                tail = log_tail(run.work, "baseline")
                if out.stage in ADAPTER_STAGES:  # the adapter's own code, before any run
                    base.problem = f"{out.stage} raised before the run began: {out.detail}" + tail
                    base.problem_kind = "adapter-error"
                    return base
                base.problem = f"the baseline run failed ({out.kind}): {out.detail}" + tail
                base.problem_kind = _failed_run_kind(out)
                return base
            self._read_baseline(row, base, run)
            return base
        finally:
            self._end_baseline(base, run)

    def _new_baseline(self, row: Row) -> Baseline:
        runtime, scenario, mode, store = row
        mode_info = find(self.adapter(runtime).modes, mode)
        return Baseline(
            runtime,
            scenario,
            mode,
            store,
            per_call=bool(mode_info and mode_info.results_per_call),
            writes_lag=bool(mode_info and mode_info.writes_lag),
        )

    def _drive_baseline(self, row: Row, base: Baseline, run: BaselineRun) -> Outcome:
        """The worker runs the scenario to its end (its store's file-system operations
        traced, where fs-op points are planned); its trace and results."""
        armed: dict[str, Any] = {}
        traced = self._fs_traced()
        if traced or self._fs_history():
            from killpoint.engine import fs_trace

            run.fs, run.url = fs_trace.mount(run.url)
            run.fs.record_into(run.work / history.HISTORY)
            if traced:
                armed = {"gates": fs_trace.landed_gates(), "release": True}
        spec = self.worker_spec(row, run.url, run.work, trace=True, log_name="baseline", **armed)
        run.worker = Worker(spec, [], time.monotonic(), self.stopping)
        deadline = time.monotonic() + self.config.timeout
        if run.fs is None:
            out = run.worker.join(deadline)
        elif not traced:
            out = run.worker.join(deadline)
            run.url = fs_trace.unmount(run.fs, run.url)
        else:
            out = fs_trace.follow(run.worker, run.fs, deadline)
            base.fs_ops = [op.to_json() for op in run.fs.ops()]
            base.fs_budget = self.config.fs_ops
            run.url = fs_trace.unmount(run.fs, run.url)
        base.trace = run.worker.trace
        base.results = out.results
        return out

    def _read_baseline(self, row: Row, base: Baseline, run: BaselineRun) -> None:
        """What the finished run left (the session, the ledger, the store's tables), held
        to the contract; the first thing that fails is the baseline's problem."""
        runtime, scenario, _, _ = row
        limit, caller = self.config.timeout, run.caller
        try:
            base.session = caller.call(
                "the adapter's read_session()", limit, self.read_session, runtime, run.url
            )
        except AdapterFault as exc:
            base.problem, base.problem_kind = str(exc), "adapter-error"
            return
        except Overdue as exc:
            base.problem, base.problem_kind = f"{exc} (in killpoint's own process)", "hung"
            return
        entries = ledger_mod.read(run.work / LEDGER)
        base.effects = effects(entries)
        try:
            base.tables = caller.call("the store's tables()", limit, self.stores.tables, run.url)
        except Overdue as exc:
            base.problem = f"the store server: {exc}"
            base.problem_kind = "store-unavailable"
            return
        assert run.worker is not None
        problems = acknowledged(run.worker.acks, base.session)
        if problems:
            base.problem = "the baseline acknowledged what its store does not hold: " + (
                "; ".join(p.sentence for p in problems)
            )
            base.problem_kind = "acknowledged-lost"
            base.problem_facts = dict(problems[0].facts or {})
            return
        found = contract.without_crash(
            resolve_scenario(scenario),
            base.session,
            entries,
            requested_turns(run.work / MODEL_STATE),
            served=len(turn_log(run.work / MODEL_STATE, SERVED_LOG)),
        )
        found += self._history_findings(row, base, run)
        # What the scenario says its runs end with, held against the baseline only (a cell
        # that ends otherwise differs from a baseline that does not), and only where no
        # contract check named the cause (a dropped confirmation changes the answer).
        found = found or expectations.unmet(resolve_scenario(scenario), base.session)
        base.findings = [contract.row_finding(f) for f in found]

    def _history_findings(self, row: Row, base: Baseline, run: BaselineRun) -> list[Finding]:
        """The run's history, held to its rules and its store's settings read back: what
        they find in an uninterrupted run is the row's (happens without a crash)."""
        mode = find(self.adapter(row[0]).modes, row[2])
        events = history.read(run.work / history.HISTORY)
        base.history = [e.data for e in events]
        durable = mode is None or mode.durable
        return [
            *history_rules.check(
                events,
                base.session,
                replays=bool(mode and mode.replays_replies),
                durable=durable,
                uninterrupted=True,
            ),
            *(settings_findings(events) if durable else ()),
        ]

    def _end_baseline(self, base: Baseline, run: BaselineRun) -> None:
        """Whatever ended the run: nothing of it left running, its store and folder
        settled; a limit or a full disk met on the way is the baseline's problem."""
        run.caller.close()
        kill_left_behind()
        if run.fs is not None:
            run.fs.close()
        refused = refusals(run.work) + "\n".join(run.worker.own_writes if run.worker else ())
        if refused:
            # A thread or fork refused in the run, or an own write the disk refused (a
            # tool's error in one baseline only, say): what the baseline holds is the
            # limit's or the disk's, not the runtime's.
            base.problem, base.problem_kind = refused, "error"
            base.findings = []
        # Kept under a failed cell's rule: its cell is unexpected unless a dependency of
        # killpoint's failed under it (Baseline.outage), as carry_baseline decides.
        failed = run.keep_failed and base.problem is not None and not base.outage
        keep = self.config.keep == "all" or (self.config.keep == "failed" and failed)
        if keep:
            self.keep_store(run.url, run.work)
        else:
            self.forget_store(run.url)
        self.settle_folder(run.work, keep=keep)
        if keep and failed:
            self.baseline_folders[base.row] = run.work

    # -- cells ----------------------------------------------------------------------------

    def trace(self, base: Baseline, points: list[CrashPoint]) -> Trace:
        """One traced worker through the row's `points`: a copy of the state at each."""
        return trace_row(self, base, points)

    def run_cell(self, cell: Cell, copy: Copy | None = None, note: str | None = None) -> CellResult:
        """One cell, to its verdict. Whatever goes wrong inside becomes the cell's finding:
        a harness error is this cell's result (with its traceback), never the campaign's end.
        `copy`: the state a row's traced worker left at the cell's first point, resumed
        instead of a worker of its own killed there (killpoint.engine.row_trace); `note`: a
        line for its timeline (why it has no copy though its row was traced)."""
        watch = self.watch()
        base = self.baseline(cell.row)
        run = CellRun(self, cell, base)
        if note:
            run.event(note)
        try:
            if watch.cause is not None:
                pass  # the store server is down: settled below, nothing to run
            elif base.problem or base.nondeterministic:
                carry_baseline(run, base)
            else:
                run.execute(copy)
        except Interrupted:
            # A cell cut short is in no report: its folder would be named nowhere.
            run.cleanup(expected=True, cut_short=True)
            raise
        except AdapterFault as exc:
            run.add(Finding("adapter-error", str(exc), evidence=exc.evidence))
        except (PointError, NormalFormError) as exc:
            run.add(Finding("missed", str(exc)))
        except Exception as exc:
            run.add(
                Finding(
                    "error",
                    f"killpoint failed on this cell: {type(exc).__name__}: {exc}",
                    evidence=tuple(traceback.format_exc().splitlines()[-30:]),
                )
            )
        try:
            run.finish()
        except Exception as exc:
            run.add(
                Finding("error", f"counting the cell's effects failed: {type(exc).__name__}: {exc}")
            )
        if self.stopping.is_set():
            # Interrupted while it ran (its workers were killed under it): not a result.
            run.cleanup(expected=True, cut_short=True)
            raise Interrupted()
        seen = refusals(run.work) + "".join(f"\n{t}" for w in run.workers for t in w.own_writes)
        seen += "".join(log_tail(run.work, w.spec.log_name) for w in run.workers)
        run.findings = watch.settle(run.findings, seen, run.url, exhausted=exhausted)
        result = run.result()
        kept = run.cleanup(result.expected)
        if kept is None and base.problem and watch.cause is None:
            # The stand-in of a row whose baseline failed ran no worker of its own: what it
            # has to show is the baseline's folder (baseline.log).
            kept = self.baseline_folders.get(cell.row)
        result.seconds = round(time.monotonic() - run.t0, 4)
        result.kept = str(kept) if kept else None
        return result


@dataclass
class BaselineRun:
    """One of a baseline's two runs, as its end needs it whatever ended it."""

    work: Path
    keep_failed: bool = True  # its folder is kept when it fails (Engine._run_baseline)
    caller: Caller = field(init=False)
    url: str = ""
    worker: Worker | None = None
    fs: PowerLossFS | None = None  # the store's folder, mounted to trace its operations


def _failed_run_kind(out: Outcome) -> str:
    """The finding of a baseline whose worker ended without its run done: a run that raised
    once it began, outside killpoint's own code, is the runtime's or its adapter's (its line
    is in the detail), not a point the engine could not reach; one killpoint's code raised,
    or a worker that died without a word, may be either's."""
    if out.kind == "timeout":
        return "hung"
    if out.kind == "error" and out.stage == RUN and not out.by_harness:
        return "run-failed"
    return "missed"


def carry_baseline(run: CellRun, base: Baseline) -> None:
    """The stand-in cell of a row that could not be planned (its baseline failed, or its two
    runs differ): no crash was made, and it carries the baseline's problem into the reports.
    NO_CRASH on its finding, so that no report blames the point its id keeps."""
    if base.problem:
        why = "the row's uninterrupted run failed"
        facts = {**(base.problem_facts or {}), NO_CRASH: True}
        finding = Finding(base.problem_kind, base.problem, expected=base.outage, facts=facts)
    else:
        why = "the row's two uninterrupted runs differ"
        finding = Finding("nondeterministic", str(base.nondeterministic), facts={NO_CRASH: True})
    run.event(
        f"plan: no crash: {why}, so none of its cells was planned; this cell carries that failure"
    )
    run.add(finding)


def trace_note(base: Baseline) -> str | None:
    """The row's note when its two baseline traces offer different points (a mode whose
    writes race the run): not a verdict; only the points both offer are planned."""
    only = one_trace_only(base)
    if not only:
        return None
    shown = ", ".join(str(p) for p in only[:6]) + (", ..." if len(only) > 6 else "")
    return (
        f"{base.mode}: baseline traces differ: {count(len(only), 'point')} offered by one "
        "trace only "
        f"({shown}); not planned"
    )


__all__ = ["SESSION_ID", "Engine", "EngineConfig", "Interrupted", "Outcome", "agent_adapter"]
