"""The worker: one process that runs (or continues) one scenario on one runtime.

It runs in a child of the forkserver, in a session of its own so that the whole
process group can be killed at once. It talks to the engine over one pipe:
  worker -> engine  ("gate", name) ("trace", name) ("ack", result) ("done", results)
                    ("error", kind, message, stage, where, raised by the harness) ("own-write", what the disk
                    refused); stage and where: killpoint.workers.raised_where
  engine -> worker  ("release", name)
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import os
import signal
import sys
import threading
import traceback
from collections.abc import Callable, Coroutine
from dataclasses import asdict, dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

from killpoint.adapters.checkpoint_gates import CheckpointGates
from killpoint.adapters.protocol import local_model
from killpoint.adapters.registry import load_adapter
from killpoint.scenarios import (
    Fault,
    Ledger,
    RunResult,
    ScriptedModel,
    drive,
    finish_order,
    gates,
    history,
)
from killpoint.scenarios.effects import use_ledger
from killpoint.scenarios.model_server import serve
from killpoint.scenarios.own_writes import on_refused
from killpoint.values.own_code import innermost, raised_by_harness
from killpoint.values.scenario_refs import resolve_scenario
from killpoint.workers.clock import skew_clock
from killpoint.workers.limits import record_refusals
from killpoint.workers.raised_where import DRIVER, INSTRUMENT, LOADING, RUN, SETUP

LEDGER = "ledger.jsonl"
MODEL_STATE = "model"


@dataclass(frozen=True)
class WorkerSpec:
    runtime: str
    scenario: str
    mode: str
    store_url: str
    work_dir: str
    session_id: str
    log_name: str = "worker"
    resume_at: int | None = None
    start_at: int = 0
    gates: tuple[str, ...] = ()
    release: bool = False  # armed gates wait for ("release", name) instead of forever
    trace: bool = False
    # Send every checkpoint's `writing` and `landed` gate as a trace message (a mode whose
    # writes lag: the engine confirms a point from what the worker says has landed).
    checkpoint_trace: bool = False
    checkpoint_offset: int = 0
    lease_seconds: float = 30.0
    faults: tuple[Fault, ...] = ()
    # The scripted model forgets every response stored before this worker started (a
    # provider whose chain is gone after the crash).
    forget_responses: bool = False
    # How the scripted model answers a turn it served before to another process (a turn
    # re-asked after a crash): scenarios.behaviours; None answers it the same.
    model_behaviour: str | None = None
    # Seconds this worker's wall clock (time.time) runs ahead of the others' (behind when
    # negative): killpoint.workers.clock.
    clock_skew: float = 0.0
    # (batch number, order): that tool batch's calls finish in this order (call indices);
    # every other batch in call order (scenarios.finish_order).
    finish_order: tuple[int, tuple[int, ...]] | None = None
    # The baseline's tool batches ((name, canonical arguments) per call, in call order): a
    # batch this worker takes from its store rather than from the model finishes in call
    # order too.
    batches: tuple[tuple[tuple[str, str], ...], ...] = ()


class _Channel:
    """The worker's end of the pipe. Gates are hit from several threads at once."""

    def __init__(self, conn: Connection) -> None:
        self.conn = conn
        self._send_lock = threading.Lock()
        self._released: dict[str, threading.Event] = {}
        self._events_lock = threading.Lock()

    def send(self, message: tuple[Any, ...]) -> None:
        with self._send_lock:
            self.conn.send(message)

    def announce(self, name: str) -> None:
        self.send(("gate", name))

    def trace(self, name: str) -> None:
        self.send(("trace", name))

    def ack(self, result: RunResult) -> None:
        self.send(("ack", asdict(result)))

    def _event(self, name: str) -> threading.Event:
        with self._events_lock:
            return self._released.setdefault(name, threading.Event())

    def wait(self, name: str) -> None:
        self._event(name).wait()

    def listen(self) -> None:
        """Read releases for as long as the engine holds the pipe open. When the pipe
        closes, the engine is gone (killed, crashed): a worker parked at a gate would
        wait forever, so it exits instead of outliving its engine."""
        while True:
            try:
                kind, name = self.conn.recv()
            except (EOFError, OSError):
                os._exit(3)
            if kind == "release":
                gates.released(name)  # no longer held, before its thread wakes
                self._event(name).set()


def worker_main(spec: WorkerSpec, conn: Connection) -> None:
    # Loaded by the forkserver, never by the engine (importing it starts its watch).
    from killpoint.workers.forkserver.watch import die_with_forkserver

    die_with_forkserver()
    # The forkserver turned the collector off (killpoint.workers.forkserver.gc_off); the runtime under
    # test gets it back.
    gc.enable()
    # A session of its own: the engine kills the process group, never a stray pid.
    os.setsid()
    # Out of the engine's group, no Ctrl-C meant for the engine reaches it: the runtime
    # gets Python's usual handler back (killpoint.workers.forkserver.signals ignored it).
    signal.signal(signal.SIGINT, signal.default_int_handler)
    work = Path(spec.work_dir)
    log_fd = os.open(work / f"{spec.log_name}.log", os.O_WRONLY | os.O_CREAT | os.O_APPEND)
    os.dup2(log_fd, 1)
    os.dup2(log_fd, 2)
    # A thread or fork refused to the runtime or its tools is killpoint's limit, not theirs.
    record_refusals(work)
    channel = _Channel(conn)
    # The ledger's and the model's writes the disk refuses: told to the engine (the
    # runtime may catch the error and record a failed tool or run of its own).
    on_refused(lambda text: channel.send(("own-write", text)))
    profile_dir = os.environ.get("KILLPOINT_PROFILE_DIR")
    try:
        if profile_dir:  # for performance work: one cProfile dump per worker
            import cProfile

            profiler = cProfile.Profile()
            results = profiler.runcall(_run, spec, channel, work)
            profiler.dump_stats(os.path.join(profile_dir, f"{spec.log_name}-{os.getpid()}.prof"))
        else:
            results = _run(spec, channel, work)
    except BaseException as exc:
        # A log on a full disk cannot take the traceback (ENOSPC): the worker must not
        # die without a word, and the engine must hear why (it is killpoint's disk).
        unlogged = ""
        try:
            traceback.print_exc()
            sys.stderr.flush()
        except OSError as log_error:
            unlogged = f" (its log could not be written: {log_error})"
        where, ours = innermost(exc.__traceback__), raised_by_harness(exc.__traceback__)
        channel.send(
            ("error", type(exc).__name__, str(exc)[:2000] + unlogged, _stage[0], where, ours)
        )
        os._exit(1)
    channel.send(("done", [asdict(r) for r in results]))
    os._exit(0)  # no atexit work: the engine has everything it needs


# Which part of the adapter's contract is running (raised_where): said with an error.
_stage = [LOADING]


def _run(spec: WorkerSpec, channel: _Channel, work: Path) -> list[RunResult]:
    from killpoint.workers import warm  # noqa: F401  (a no-op when the forkserver preloaded it)

    _stage[0] = LOADING  # whatever the forkserver's warm-up left

    # The run's history, shared by every worker of the cell (scenarios.history).
    history.configure(work / history.HISTORY)
    finish_order.reset()
    finish_order.install()
    finish_order.known(spec.batches)
    if spec.finish_order is not None:
        finish_order.choose(*spec.finish_order)
    if spec.clock_skew:
        skew_clock(spec.clock_skew)
        history.record("clock", skew=spec.clock_skew)
    adapter = load_adapter(spec.runtime)
    _stage[0] = INSTRUMENT
    adapter.instrument(CheckpointGates(spec.checkpoint_offset))
    _stage[0] = SETUP
    scenario = resolve_scenario(spec.scenario)
    threading.Thread(target=channel.listen, daemon=True).start()
    gates.configure(
        spec.gates,
        announce=channel.announce,
        wait=channel.wait if spec.release else None,
        tracer=channel.trace if spec.trace else _writes(channel) if spec.checkpoint_trace else None,
    )
    model = ScriptedModel(
        scenario.script,
        work / MODEL_STATE,
        faults=(*scenario.faults, *spec.faults),
        behaviour=spec.model_behaviour,
        replan=scenario.replan,
    )
    if spec.forget_responses:
        model.forget()
    ledger = Ledger(work / LEDGER, scenario.name)
    # The agent's own tools marked `killpoint.effect` record into the cell's ledger (in
    # this process and in any it starts).
    os.environ.update(use_ledger(ledger))
    with contextlib.ExitStack() as stack:
        if local_model(adapter):
            # Before the driver: the runtime's clients read the base URL when they are made.
            stack.enter_context(serve(model))
        _stage[0] = DRIVER
        driver = adapter.driver(
            scenario, spec.store_url, spec.mode, ledger, lease_seconds=spec.lease_seconds
        )
        _stage[0] = RUN
        stack.enter_context(model)
        return asyncio.run(
            _then_over(
                drive(
                    scenario,
                    driver,
                    model,
                    session_id=spec.session_id,
                    resume_at=spec.resume_at,
                    start_at=spec.start_at,
                    on_result=channel.ack,
                )
            )
        )


async def _then_over(driving: Coroutine[Any, Any, list[RunResult]]) -> list[RunResult]:
    """The driver's outcome, and then no tool call waits for its turn to finish any more
    (finish_order.over): asyncio.run's exit waits for every call's thread."""
    try:
        return await driving
    finally:
        finish_order.over()


def _writes(channel: _Channel) -> Callable[[str], None]:
    """A tracer that sends only the gates where a checkpoint's write begins and lands."""

    def trace(name: str) -> None:
        if name.startswith("checkpoint:") and not gates.base_name(name).endswith(":committing"):
            channel.trace(name)

    return trace
