"""`killpoint check-adapter`: what the engine assumes of an adapter, checked on one row
before a user runs the matrix on it.

A scenario's baseline runs twice with every gate traced, its store kept for a moment:
- baseline: it ends as the scenario expects, and every status the driver returned is in
  the store (an acknowledgement is durable);
- normal form: `read_session` returns the documented shape (killpoint.values.normal_form);
- checkpoint gates: `instrument` numbers durable writes 1, 2, ... and each lands;
- progress: `progress()` counts exactly the checkpoints whose `landed` gate passed;
- inspect: `inspect()` reads the store an uninterrupted run left without raising, returns
  sentences or Findings, and finds no broken invariant there (an exception or a wrong
  value would make every cell `adapter-error`);
- mode: what the mode declares (persists mid-run or not, results per call) is what the
  traces show (killpoint.judge.mode_check, which every campaign runs on its baselines);
- deterministic: the two runs give the same session (after `excluded`), effects and gates;
- resume: a kill at the first boundary (right after checkpoint 1) resumes to the baseline.

On a store the adapter does not declare in `stores`, nothing runs: one failed check,
`store`, says so and how to fix it.

A check whose premise failed is skipped (the resume of a nondeterministic row proves
nothing), so each defect is reported once, by the check that names it.
"""

from __future__ import annotations

import importlib
import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from killpoint import kinds
from killpoint.adapters.blame import charged, checked_problems, checked_progress
from killpoint.adapters.protocol import local_model, store_unsupported, supported_stores
from killpoint.engine.cell_run import log_tail
from killpoint.engine.deadline import Caller
from killpoint.engine.engine import SESSION_ID, Engine
from killpoint.engine.options import EngineConfig
from killpoint.errors import AdapterFault, NormalFormError, Overdue
from killpoint.judge import contract
from killpoint.judge.baseline import Baseline, effects
from killpoint.judge.mode_check import check_mode, mid_run_checkpoints
from killpoint.judge.oracle import comparable, first_difference
from killpoint.scenarios import Scenario, gates
from killpoint.scenarios import ledger as ledger_mod
from killpoint.scenarios.model import FORMATS, SERVED_PATHS, requests_seen
from killpoint.values.cell import Cell, Row
from killpoint.values.findings import Finding
from killpoint.values.modes import Mode, find
from killpoint.values.normal_form import exclude, validate_session
from killpoint.values.points import CrashPoint, Schedule
from killpoint.values.sentences import count
from killpoint.workers.processes import Outcome, Worker
from killpoint.workers.worker import LEDGER, MODEL_STATE

PASS, FAIL, SKIP = "pass", "fail", "skip"
NAMES = (
    "baseline",
    "normal form",
    "checkpoint gates",
    "progress",
    "inspect",
    "mode",
    "deterministic",
    "resume",
)
GUIDE = "docs/adapters.md"
OTHER_CLIENTS = f"{GUIDE}, 'When the model client is not the openai SDK'"


@dataclass(frozen=True)
class Check:
    name: str
    status: str  # pass | fail | skip
    detail: str
    hint: str = ""


@dataclass
class TracedRun:
    """One baseline run, its store still there to be read."""

    work: Path
    url: str
    outcome: Outcome
    trace: list[str]
    acks: list[dict[str, Any]]
    raw: Any = None  # read_session's value, unchecked
    read_error: str | None = None  # the check's sentence when read_session failed
    progress: int | None = None
    progress_error: str | None = None
    inspected: list[str | Finding] = field(default_factory=list)
    inspect_error: str | None = None
    effects: Counter[tuple[str, str]] = field(default_factory=Counter)
    # Every HTTP request the run's scripted model received (scenarios.model.requests_seen).
    requests: list[dict[str, Any]] = field(default_factory=list)
    keep: bool = False  # its folder is kept: the check that failed names it


def run_checks(
    engine: Engine, row: Row, scenario: Scenario, mode: Mode, *, log_lines: int = 12
) -> list[Check]:
    runtime = row[0]
    adapter = engine.adapter(runtime)
    checks: dict[str, Check] = {}

    def add(name: str, status: str, detail: str, hint: str = "") -> None:
        checks[name] = Check(name, status, detail, hint)

    def skip(name: str, why: str) -> None:
        add(name, SKIP, why)

    unsupported = store_unsupported(runtime, adapter, row[3])
    if unsupported is not None:
        # Nothing runs: the matrix would skip every row on this store, so no check of it
        # says anything of the adapter (and its driver may refuse the URL by design).
        return [
            Check("store", FAIL, unsupported, _store_hint(adapter, row[3])),
            *(Check(n, SKIP, "needs a store the adapter supports") for n in NAMES),
        ]
    first = _traced(engine, row, "first")
    try:
        second = _traced(engine, row, "second")
        try:
            _baseline(add, first, second, scenario, log_lines, row, local_model(adapter))
            if checks["baseline"].status != PASS:
                for name in NAMES[1:]:
                    skip(name, "needs a baseline that runs")
                return [checks[n] for n in NAMES]
            session = _normal_form(add, first, second, adapter.excluded)
            landed = _checkpoint_gates(add, first.trace)
            if landed is None:
                skip("progress", "needs checkpoint gates")
                _inspect(add, first)
                skip("mode", "needs checkpoint gates")
            else:
                _progress(add, first, landed)
                _inspect(add, first)
                _mode(add, [first.trace, second.trace], mode)
            if session is None:
                skip("deterministic", "needs the normal form")
            else:
                _deterministic(add, first, second, adapter.excluded, mode)
            failed = [n for n in NAMES[:-1] if checks[n].status == FAIL]
            if failed:
                skip("resume", f"needs {', '.join(failed)} to pass")
            elif landed is None:
                skip("resume", "needs checkpoint gates")
            else:
                base = _as_baseline(row, first, session, mode)
                engine.adopt_baseline(base)
                _resume(add, engine, row, base)
        finally:
            _forget(engine, second)
    finally:
        _forget(engine, first)
    return [checks[n] for n in NAMES]


def _store_hint(adapter: Any, kind: str) -> str:
    """The fix for a store the adapter does not declare: a store it does, or the
    declaration, if the runtime does store there."""
    stores = supported_stores(adapter) or ()
    other = "--store sqlite" if "sqlite" in stores else "--store postgresql+psycopg://..."
    return (
        f"run it with {other}; or, if the runtime does store on {kind}, add {kind!r} to the "
        f"adapter's `stores` ({GUIDE}, 'The store URL')"
    )


# -- running and reading ----------------------------------------------------------------------


def _traced(engine: Engine, row: Row, label: str) -> TracedRun:
    runtime = row[0]
    work = engine.work_dir(f"check-{label}")
    url = engine.stores.fresh(work)
    worker = Worker(
        engine.worker_spec(row, url, work, trace=True, log_name="baseline"),
        [],
        time.monotonic(),
        engine.stopping,
    )
    outcome = worker.join(time.monotonic() + engine.config.timeout)
    run = TracedRun(work, url, outcome, list(worker.trace), list(worker.acks))
    adapter = engine.adapter(runtime)
    # Each call into the adapter has --timeout, as in a campaign: one that never returns
    # fails its check (its thread is abandoned), and the command ends.
    caller = Caller(f"check-{label}", engine.stopping)
    limit = engine.config.timeout
    try:
        try:
            run.raw = caller.call("read_session()", limit, adapter.read_session, url, SESSION_ID)
        except Overdue as exc:
            run.read_error = f"the adapter's {exc}"
        except Exception as exc:
            run.read_error = f"read_session raised {type(exc).__name__}: {exc}"
        # Read and judged as a matrix cell reads it (cell_store.progress): one that raised
        # or answered other than an int is said as the matrix says it ("returned str '5'").
        progress = charged("progress()", adapter.progress)
        try:
            run.progress = checked_progress(
                caller.call("progress()", limit, progress, url, SESSION_ID)
            )
        except Overdue as exc:
            run.progress_error = f"the adapter's {exc}"
        except AdapterFault as exc:
            run.progress_error = str(exc)
        inspect = charged("inspect()", adapter.inspect)
        try:
            run.inspected = checked_problems(
                caller.call("inspect()", limit, inspect, url, SESSION_ID)
            )
        except Overdue as exc:
            run.inspect_error = f"the adapter's {exc}"
        except AdapterFault as exc:
            run.inspect_error = str(exc)
    finally:
        caller.close()
    run.effects = effects(ledger_mod.read(work / LEDGER))
    run.requests = requests_seen(work / MODEL_STATE)
    return run


def _forget(engine: Engine, run: TracedRun) -> None:
    engine.forget_store(run.url)
    engine.settle_folder(run.work, keep=run.keep)


# -- the checks ---------------------------------------------------------------------------------


def _baseline(
    add: Any,
    first: TracedRun,
    second: TracedRun,
    scenario: Scenario,
    n: int,
    row: Row,
    served_locally: bool,
) -> None:
    cell = "/".join(row)
    for label, run in (("first", first), ("second", second)):
        if run.outcome.kind != "done":
            run.keep = True
            add(
                "baseline",
                FAIL,
                f"the {label} baseline run failed ({run.outcome.kind}): {run.outcome.detail}"
                + log_tail(run.work, "baseline", n),
                _failed_run_hint(run, cell, served_locally),
            )
            return
    ended = [r["status"] for r in first.outcome.results]
    wanted = [e.status for e in scenario.expected]
    # A session stops at its first run that does not complete: compare what ran.
    stopped_early = len(ended) < len(wanted) and ended[-1:] != ["COMPLETED"]
    if ended != (wanted[: len(ended)] if stopped_early else wanted):
        hint = (
            "RunResult.status is the runtime's status of the run as stored: one of "
            "PENDING, RUNNING, PAUSED, COMPLETED, ERROR, CANCELLED"
        )
        if not first.requests or any(r["format"] is None for r in first.requests):
            # A model the runtime could not reach ends its runs in ERROR, not in a hang.
            first.keep = True
            hint += (
                f". In the baseline of {cell}: "
                + model_traffic(first.requests, served_locally)
                + " "
                + kept_folder(first)
            )
        add(
            "baseline",
            FAIL,
            f"the runs ended {ended}; scenario {scenario.name!r} expects "
            f"{[e.status for e in scenario.expected]}",
            hint,
        )
        return
    if first.raw is not None and first.read_error is None:
        try:
            validate_session(first.raw)
        except NormalFormError:
            pass  # the normal form check says so
        else:
            lost = contract.acknowledged(first.acks, first.raw)
            if lost:
                add(
                    "baseline",
                    FAIL,
                    "; ".join(f.sentence for f in lost),
                    "any status a driver returns (ERROR included) is an acknowledgement: "
                    "write it durably before start() or resume() returns it",
                )
                return
    runs = len(ended)
    add(
        "baseline",
        PASS,
        f"{count(runs, 'run')} ended {', '.join(ended)}, every acknowledgement stored",
    )


# The worker's and the drive loop's calls into the adapter, as a traceback shows their
# lines: which of them an exception came out of (the outermost such frame).
ADAPTER_CALLS = (
    ("killpoint.workers.worker", "adapter.instrument(", "instrument()", True),
    ("killpoint.workers.worker", "driver = adapter.driver(", "driver()", True),
    ("killpoint.scenarios.drive", "driver.start(", "driver's start()", False),
    ("killpoint.scenarios.drive", "driver.resume(", "driver's resume()", False),
)
FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line \d+, in \S+$')


@dataclass(frozen=True)
class Raised:
    """Which of the adapter's calls raised, by the worker's traceback."""

    call: str  # "instrument()", "driver()", "driver's start()", "driver's resume()"
    before_run: bool  # before the scenario's run began (no model request was possible)


def raised_in(work: Path) -> Raised | None:
    """Which adapter call the exception that ended a worker came out of, read from the
    traceback in its log (the last one there); None when the log names none of them."""
    lines = log_tail(work, "baseline", 10**6).splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent")]
    if not starts:
        return None
    frames = lines[starts[-1] :]
    for i, line in enumerate(frames[:-1]):
        frame = FRAME.match(line)
        if frame is None:
            continue
        where = Path(frame["file"]).parts[-2:]
        source = frames[i + 1].strip()
        for module, text, call, before in ADAPTER_CALLS:
            if where == _file_of(module) and text in source:
                return Raised(call, before)
    return None


def _file_of(module: str) -> tuple[str, ...]:
    """The last two parts of a module's file (`workers/worker.py`), as a traceback has it."""
    return Path(importlib.import_module(module).__file__ or "").parts[-2:]


def _failed_run_hint(run: TracedRun, cell: str, served_locally: bool) -> str:
    """The hint of a baseline whose worker did not end with a result: what raised, as far
    as its traceback tells, and what the model received when the run had begun."""
    kind = run.outcome.kind
    raised = raised_in(run.work) if kind == "error" else None
    if raised is not None and raised.before_run:
        # Nothing of the scenario ran: the model was never asked, whatever its client.
        return (
            f"the adapter's {raised.call} raised in the worker before the run began (in "
            f"the baseline of {cell}), so the scripted model was never asked: fix "
            f"{raised.call} (the exception and its traceback are in baseline.log). "
            + kept_folder(run)
        )
    who = f"the {raised.call}" if raised is not None else "the driver"
    what = {"timeout": "hung (past --timeout)", "error": "raised", "died": "died"}.get(
        kind, "raised or died"
    )
    return (
        f"{who} {what} in the baseline of {cell} (a store error must propagate, but a "
        "run of a built-in scenario should not meet one). "
        + model_traffic(run.requests, served_locally, raised=kind == "error")
        + " "
        + kept_folder(run)
    )


def model_traffic(
    requests: list[dict[str, Any]], served_locally: bool, *, raised: bool = False
) -> str:
    """What the scripted model received in one run, what of it no format serves, and, when
    it received nothing, how a runtime's model client reaches it (`raised`: the run raised,
    which may or may not be its model client's doing)."""
    answers = ", ".join(f"POST …{p}" for p in SERVED_PATHS)
    if not requests and raised:
        return (
            "The scripted model received no request before it raised; if what it raised "
            "comes from the runtime's model client (a connection refused, a key missing): "
            + _unreached(served_locally)
        )
    if not requests:
        return "The scripted model received no request: " + _unreached(served_locally)
    labels = {f.name: f.label for f in FORMATS}
    served = Counter(
        (r["method"], r["path"], labels[r["format"]] + (", streamed" if r.get("stream") else ""))
        for r in requests
        if r.get("format") in labels
    )
    unserved = Counter((r["method"], r["path"]) for r in requests if r.get("format") not in labels)
    parts = [
        f"The scripted model received {count(len(requests), 'request')}: "
        + "; ".join(f"{n} × {m} {p} ({label})" for (m, p, label), n in served.items())
        if served
        else f"The scripted model received {count(len(requests), 'request')}, none it serves"
    ]
    if unserved:
        parts.append(
            "it does not serve "
            + "; ".join(f"{n} × {m} {p}" for (m, p), n in unserved.items())
            + f" (it answers {answers})"
        )
    return "; ".join(parts) + "."


def _unreached(served_locally: bool) -> str:
    """How a runtime's model client missed the scripted model, and what reaches it."""
    if served_locally:
        return (
            "the worker served it at a local address (its base URL in KILLPOINT_MODEL_URL, "
            "OPENAI_BASE_URL and ANTHROPIC_BASE_URL), and the runtime's model client was not "
            "pointed there (a base URL or a client set in code or configuration wins over "
            f"the environment; see {OTHER_CLIENTS})."
        )
    return (
        "it is served in the worker to the openai SDK's own transport, and the runtime's "
        "model client is not that (LiteLLM, the anthropic SDK, a client of its own, a call "
        "from another process). Set `local_model = True` on the adapter to serve it at a "
        "real local address too, its base URL in the worker's environment; see "
        f"{OTHER_CLIENTS}."
    )


def kept_folder(run: TracedRun) -> str:
    return (
        f"The run's folder is kept: {run.work} (baseline.log: what the worker printed; "
        f"{MODEL_STATE}/requests.log: every request the model received)."
    )


def _normal_form(
    add: Any, first: TracedRun, second: TracedRun, excluded: Any
) -> dict[str, Any] | None:
    hint = f"read_session returns the normal form: see killpoint.values.normal_form and {GUIDE}"
    for run in (first, second):
        if run.read_error is not None:
            add("normal form", FAIL, run.read_error, hint)
            return None
        if run.raw is None:
            add(
                "normal form",
                FAIL,
                "read_session returned None after the run ended (None means no session)",
                "read the session by the session_id the engine passes to driver().start",
            )
            return None
        try:
            validate_session(run.raw)
        except NormalFormError as exc:
            add("normal form", FAIL, str(exc).removeprefix("killpoint: "), hint)
            return None
    acked = list(dict.fromkeys(a["run_id"] for a in first.acks))
    stored = list(first.raw["runs"])
    if stored != acked:
        add(
            "normal form",
            FAIL,
            f"the session's runs are {stored}; the driver ran {acked}",
            "key each run by the run_id driver().start was given, in the order runs started",
        )
        return None
    messages = sum(len(r["messages"]) for r in first.raw["runs"].values())
    add("normal form", PASS, f"{count(len(stored), 'run')}, {count(messages, 'message')}")
    checked: dict[str, Any] | None = exclude(first.raw, excluded)
    return checked


def _landed(trace: list[str]) -> list[int]:
    found = []
    for name in trace:
        gate = gates.parse(name)
        if gate and gate.kind == "checkpoint" and gate.phase == "landed" and gate.occurrence == 1:
            found.append(gate.number or 0)
    return found


def _checkpoint_gates(add: Any, trace: list[str]) -> int | None:
    landed = _landed(trace)
    hint = (
        "instrument() must send every durable write of a checkpoint through the "
        "CheckpointGates it is given (wrap, write/awrite) and watch the driver's commits"
    )
    if not landed:
        add("checkpoint gates", FAIL, "no checkpoint:N:landed gate in the baseline's trace", hint)
        return None
    if sorted(landed) != list(range(1, len(landed) + 1)):
        add("checkpoint gates", FAIL, f"checkpoints landed as {landed}; expected 1, 2, ...", hint)
        return None
    commits = Counter(
        g.number
        for n in trace
        if (g := gates.parse(n)) and g.kind == "checkpoint" and g.phase == "committing"
    )
    detail = f"{count(len(landed), 'checkpoint')} landed"
    if not commits:
        detail += " (no committing gate: mid-commit points are not planned)"
    split = sorted((n, k) for n, k in commits.items() if n is not None and k > 1)
    if split:
        # Not a failure (the runtime may mean it), but a kill between two of a checkpoint's
        # transactions leaves part of it in the store: what the user must know to read the
        # mid-commit cells, which kill before the last one.
        shown = ", ".join(f"checkpoint {n} in {k}" for n, k in split[:3])
        more = f" and {len(split) - 3} more" if len(split) > 3 else ""
        detail += (
            f"; committed in several transactions: {shown}{more} (a kill between them "
            "leaves part of a checkpoint in the store; mid-commit kills before the last)"
        )
    add("checkpoint gates", PASS, detail)
    return len(landed)


def _progress(add: Any, run: TracedRun, landed: int) -> None:
    hint = (
        "progress(store_url, session_id) counts the checkpoints in the store: one per "
        "landed gate, none for a write that failed, 0 for an absent session"
    )
    if run.progress_error is not None:
        add("progress", FAIL, run.progress_error, hint)
        return
    if run.progress != landed:
        add(
            "progress",
            FAIL,
            f"progress() said {run.progress} after the baseline; {count(landed, 'checkpoint')} landed",
            hint,
        )
        return
    add("progress", PASS, f"{count(landed, 'checkpoint')}, as the gates say")


def _inspect(add: Any, run: TracedRun) -> None:
    hint = (
        "inspect(store_url, session_id) reads the store after each crash and returns a "
        "list: a sentence per broken invariant, a Finding of kind 'inconsistency' for a "
        "field that disagrees; what it raises makes the cell adapter-error"
    )
    if run.inspect_error is not None:
        add("inspect", FAIL, run.inspect_error, hint)
        return
    broken = [p for p in run.inspected if isinstance(p, str)]
    if broken:
        add(
            "inspect",
            FAIL,
            f"inspect() found {count(len(broken), 'broken invariant')} in the store an "
            f"uninterrupted run left: {'; '.join(broken[:3])}",
            "without a crash nothing may be broken: either the runtime's store is, or "
            "inspect() reports what is not a problem",
        )
        return
    add("inspect", PASS, "the uninterrupted run's store is sound by inspect()")


def _mode(add: Any, traces: list[list[str]], mode: Mode) -> None:
    found = check_mode(mode, traces)
    if found.problems:
        add(
            "mode",
            FAIL,
            "; ".join(found.problems),
            "declare the Mode as the runtime behaves, and build the agent in the mode the "
            "engine asks for: the engine plans its points from the declaration",
        )
    elif "the scenario makes no tool call" in found.unseen:
        add("mode", SKIP, "the scenario has no tool call, so nothing happens mid-run")
    else:
        unseen = f" (not seen: {'; '.join(found.unseen)})" if found.unseen else ""
        add("mode", PASS, found.declared + unseen)


def _skeleton(trace: list[str], *, checkpoints: bool = True) -> tuple[list[str], Counter[str]]:
    """Run, model (and checkpoint) gates in order; tool gates counted (a batch's calls run
    concurrently, their gates interleave as they please)."""
    ordered = [
        n
        for n in trace
        if not n.startswith("tool:") and (checkpoints or not n.startswith("checkpoint:"))
    ]
    return ordered, Counter(n for n in trace if n.startswith("tool:"))


def _gate_difference(one: list[str], two: list[str]) -> str:
    at = next((i for i, (a, b) in enumerate(zip(one, two, strict=False)) if a != b), None)
    if at is not None:
        return f"gate {at + 1}: {one[at]!r} vs {two[at]!r}"
    return f"{len(one)} vs {len(two)} gates"


def _deterministic(
    add: Any, first: TracedRun, second: TracedRun, excluded: Any, mode: Mode
) -> None:
    one, two = exclude(first.raw, excluded), exclude(second.raw, excluded)
    diff = first_difference(comparable(one), comparable(two))
    if diff is not None:
        add(
            "deterministic",
            FAIL,
            f"two runs stored different sessions: {diff}",
            "a key that differs between two runs by construction (an id, a timestamp) "
            "belongs in the adapter's `excluded`",
        )
        return
    if first.effects != second.effects:
        add(
            "deterministic",
            FAIL,
            f"side effects differ: {dict(first.effects)} vs {dict(second.effects)}",
            "every tool call goes through scenario.build_tools(ToolEnv(ledger)), once per call",
        )
        return
    (order1, tools1), (order2, tools2) = _skeleton(first.trace), _skeleton(second.trace)
    if order1 == order2 and tools1 == tools2:
        add("deterministic", PASS, f"the same session, effects and {len(first.trace)} gates twice")
        return
    # Checkpoints written behind the run land at different places from one run to the next.
    (loose1, _), (loose2, _) = (
        _skeleton(first.trace, checkpoints=False),
        _skeleton(second.trace, checkpoints=False),
    )
    same_count = len(_landed(first.trace)) == len(_landed(second.trace))
    if tools1 != tools2:
        where = f"tool gates {sorted((tools1 - tools2) + (tools2 - tools1))[:3]}"
    elif loose1 != loose2 or not same_count:
        where = _gate_difference(loose1, loose2) if loose1 != loose2 else "checkpoint counts"
    elif getattr(mode, "writes_lag", False):
        add(
            "deterministic",
            PASS,
            "the same session, effects, model turns and checkpoint count twice; the "
            "checkpoints landed at different places, as the mode's writes_lag declares",
        )
        return
    else:
        add(
            "deterministic",
            FAIL,
            "the same session and model turns twice, but the checkpoints landed at different "
            f"places ({_gate_difference(order1, order2)})",
            "a runtime that writes checkpoints in the background, behind the run, declares "
            "the mode with writes_lag=True",
        )
        return
    add(
        "deterministic",
        FAIL,
        f"the two runs passed different gates ({where})",
        "the same scenario must make the same model turns and tool calls every time",
    )


def _as_baseline(row: Row, run: TracedRun, session: Any, mode: Mode) -> Baseline:
    base = Baseline(
        *row,
        session=session,
        effects=run.effects,
        trace=run.trace,
        results=run.outcome.results,
        per_call=mode.results_per_call,
    )
    base.analyse()
    return base


def first_kill(base: Baseline) -> CrashPoint | None:
    """The first boundary (a kill right after a checkpoint that is not the last), or when
    there is none the first kill the baseline offers."""
    groups = kinds.groups()
    points = kinds.points_of(base, groups["boundaries"]) or kinds.points_of(base, groups["kills"])
    return points[0] if points else None


def _resume(add: Any, engine: Engine, row: Row, base: Baseline) -> None:
    point = first_kill(base)
    if point is None:
        add("resume", SKIP, "the baseline offers no point to kill it at")
        return
    result = engine.run_cell(Cell(*row, schedule=Schedule([point])))
    if result.expected:
        add("resume", PASS, f"killed at {point}: {result.verdict}, as expected")
        return
    sentences = [f.get("sentence", "") for f in result.findings if not f.get("expected")]
    add(
        "resume",
        FAIL,
        f"killed at {point}, the cell ended {result.verdict}: " + "; ".join(sentences[:3]),
        "resume(run_id) continues the stored run from its last checkpoint; if the adapter "
        "does what the runtime documents, this is a finding about the runtime itself. Rerun "
        f"the cell with `{result.replay} --keep` and read its worker logs",
    )


def default_mode(modes: tuple[Mode, ...] | list[Mode]) -> Mode | None:
    """The first runnable mode that persists mid-run (the one with the most to check)."""
    runnable = [m for m in modes if m.runnable]
    return next((m for m in runnable if m.persists_mid_run), runnable[0] if runnable else None)


def engine_for(store: str, timeout: float, work_parent: Path | None) -> Engine:
    return Engine(EngineConfig(store=store, timeout=timeout, keep="none", work_parent=work_parent))


__all__ = [
    "FAIL",
    "NAMES",
    "PASS",
    "SKIP",
    "Check",
    "default_mode",
    "engine_for",
    "find",
    "mid_run_checkpoints",
    "run_checks",
]
