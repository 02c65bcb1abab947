"""A mode's declaration held against what its baseline's trace shows.

A mode says whether the runtime persists mid-run, whether each call's result is durable on
its own (or no tool result is ever written before the end), and whether its writes land
behind the run (killpoint.values.modes). The engine plans from those facts, so a runtime
that breaks them is judged against a promise it never kept: a factory that ignores the
mode it is given (writes only at the end while the row says `tool-batch`) would have its
mid-run kills called expected losses. Every baseline's trace is checked here, by the
campaign and by `check-adapter` alike; what the trace cannot show (a scenario without tool
calls says nothing of mid-run writes) is not held against it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from killpoint.scenarios import gates
from killpoint.values.modes import Mode
from killpoint.values.sentences import count


@dataclass(frozen=True)
class ModeCheck:
    """What one mode's baseline traces showed: `problems` (each a sentence, worded by the
    trace) break the declaration; `unseen` says why a fact could not be checked."""

    declared: str
    problems: tuple[str, ...] = ()
    unseen: tuple[str, ...] = ()


def _parsed(trace: Sequence[str]) -> list[gates.Gate]:
    return [g for name in trace if (g := gates.parse(name)) is not None]


def _landed(gate: gates.Gate) -> bool:
    return gate.kind == "checkpoint" and gate.phase == "landed"


def mid_run_checkpoints(trace: Sequence[str], lagging: bool = False) -> int:
    """Checkpoints that landed right after a tool call finished: a batch's (or a call's)
    results made durable while the run goes on (a write after which the run makes no
    other step is its terminal one). A checkpoint after a model turn is the run coming to
    rest (COMPLETED, ERROR, PAUSED for a confirmation), which a mode that
    persists only at the end writes too. A mode whose writes lag the run lands them later,
    while the next model turn runs: for it, every checkpoint landed after the first tool
    call finished and before the last model turn began counts."""
    parsed = _parsed(trace)
    if lagging:
        finished = [i for i, g in enumerate(parsed) if g.kind == "tool" and g.phase == "finished"]
        models = [i for i, g in enumerate(parsed) if _request(g)]
        if not finished or not models:
            return 0
        return sum(1 for g in parsed[finished[0] + 1 : models[-1]] if _landed(g))
    return _landed_after(parsed, lambda g: g.kind == "tool" and g.phase == "finished")


def mid_run_replies(trace: Sequence[str]) -> int:
    """Checkpoints that landed right after a model turn, the run going on: a reply made
    durable mid-run (a mode whose tool results are never written persists mid-run so)."""
    return _landed_after(_parsed(trace), _request)


def _request(gate: gates.Gate) -> bool:
    """A model turn's request (not a chunk of its streamed reply)."""
    return gate.kind == "model" and gate.phase == "received"


def _landed_after(parsed: Sequence[gates.Gate], step: Callable[[gates.Gate], bool]) -> int:
    """Checkpoints landed right after a gate `step` accepts, the run going on."""
    found, after = 0, False
    for n, gate in enumerate(parsed):
        if gate.kind == "checkpoint":
            if _landed(gate) and after and _goes_on(parsed[n + 1 :]):
                found += 1
        else:
            after = step(gate)
    return found


def _goes_on(rest: Sequence[gates.Gate]) -> bool:
    """Whether the run makes another step after this point: a write followed by none is
    the run coming to rest (a cancel honoured right after a batch ends it CANCELLED)."""
    for gate in rest:
        if gate.kind == "run":
            return False
        if gate.kind in ("model", "tool"):
            return True
    return False


def short_batches(trace: Sequence[str]) -> list[tuple[int, int, int]]:
    """Batches whose calls finished without a checkpoint landing for each: (batch, calls
    finished, checkpoints landed from the batch's first call to the next model turn)."""
    short: list[tuple[int, int, int]] = []
    batch, calls, landed, open_ = 0, 0, 0, False

    def close() -> None:
        if open_ and calls and landed < calls:
            short.append((batch, calls, landed))

    for gate in _parsed(trace):
        if gate.kind == "model" or (gate.kind == "run" and open_):
            close()
            open_, calls, landed = False, 0, 0
        elif gate.kind == "tool":
            if not open_:
                open_, batch = True, batch + 1
            calls += gate.phase == "finished"
        elif open_ and _landed(gate):
            landed += 1
    close()
    return short


def check_mode(mode: Mode, traces: Sequence[Sequence[str]]) -> ModeCheck:
    """The declaration of `mode` against its baseline traces (one or two runs of the same
    scenario): a mid-run write it promises must show in some trace, one it declares it
    never makes is a problem in whichever trace shows it. Writes that lag race the run,
    so where one lands says nothing certain: only what a lagging mode shows is held."""
    traces = [list(t) for t in traces if t]
    flags = [f"persists_mid_run={mode.persists_mid_run}"]
    if mode.results_per_call:
        flags.append("results_per_call=True")
    if mode.writes_lag:
        flags.append("writes_lag=True")
    if not mode.tool_results_durable:
        flags.append("tool_results_durable=False")
    declared = f"mode {mode.name!r} declares {', '.join(flags)}"
    if not traces or not any(g.kind == "tool" for t in traces for g in _parsed(t)):
        return ModeCheck(declared, unseen=("the scenario makes no tool call",))
    problems: list[str] = []
    unseen: list[str] = []
    mid = [mid_run_checkpoints(t, lagging=mode.writes_lag) for t in traces]
    if not mode.tool_results_durable:
        if mode.persists_mid_run and not any(mid_run_replies(t) for t in traces):
            problems.append(
                f"{declared}, but no checkpoint landed after a model turn while the run went "
                "on (it wrote only when the run came to rest)"
            )
        if any(mid):
            problems.append(
                f"{declared}, but {count(max(mid), 'checkpoint')} landed after a tool call, "
                "the run going on (a tool's result was written)"
            )
    elif mode.persists_mid_run and not any(mid):
        if mode.writes_lag:
            # Measured on LangGraph's async durability: in one run of two, every write of
            # a run with room for them may land after its last model turn began. The cells
            # are judged on what the store holds there, so nothing is passed on the promise.
            unseen.append("every write landed after the last model turn (the writes lag)")
        else:
            problems.append(
                f"{declared}, but no checkpoint landed after a tool call while the run "
                "went on (it wrote only when the run came to rest)"
            )
    if not mode.persists_mid_run and mode.tool_results_durable and any(mid):
        problems.append(
            f"{declared}, but {count(max(mid), 'checkpoint')} landed after a tool call, "
            "the run going on"
        )
    if mode.results_per_call and not mode.writes_lag:
        # A batch of a results-per-call mode lands a checkpoint for each call it finished.
        short = next((s for t in traces if (s := short_batches(t))), None)
        if short:
            batch, calls, landed = short[0]
            problems.append(
                f"{declared}, but tool batch {batch} finished {count(calls, 'call')} with "
                f"{count(landed, 'checkpoint')} landed before the next model turn"
            )
    elif mode.results_per_call:
        unseen.append("which write holds which call's result (the writes lag)")
    return ModeCheck(declared, tuple(problems), tuple(unseen))


__all__ = ["ModeCheck", "check_mode", "mid_run_checkpoints", "mid_run_replies", "short_batches"]
