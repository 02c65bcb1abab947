"""`killpoint demo`: the classic story, told step by step from one real cell's evidence."""

from __future__ import annotations

from killpoint import kinds
from killpoint.adapters.registry import load_adapter
from killpoint.cli import output as cli_output
from killpoint.cli import verbosity
from killpoint.engine.campaign import CampaignConfig
from killpoint.engine.engine import SESSION_ID, Engine
from killpoint.engine.options import EngineConfig
from killpoint.errors import ConfigError, OptionError
from killpoint.redaction import redact
from killpoint.values.cell import Cell
from killpoint.values.durations import offset
from killpoint.values.modes import find
from killpoint.values.points import Schedule
from killpoint.values.sentences import count
from killpoint.values.shown import line

# What `demo` calls the options it passes on (it has --mode, not --modes).
LABELS = {"modes": "--mode", "scenarios": "the demo's scenario"}


def say(text: str, *, outcome: bool = False) -> None:
    """A line of the story: secrets masked, control characters and newlines shown escaped
    (killpoint.values.shown.line); with --quiet only the outcome (the verdict and the
    replay command)."""
    if outcome or not verbosity.quiet():
        print(line(redact(text)))


def run_demo(*, mode: str | None = None, store: str = "sqlite", runtime: str = "reference") -> int:
    """One cell of `research`: in `mode`, or the runtime's first mode that persists mid-run."""
    try:
        config = CampaignConfig(
            runtime=runtime, scenarios=("research",), modes=(mode,) if mode else (), store=store
        )
        config.validate()
    except OptionError as exc:
        return cli_output.usage_error(exc.text(LABELS.get(exc.option)))
    except ConfigError as exc:
        return cli_output.usage_error(str(exc))
    modes = load_adapter(runtime).modes
    chosen = find(modes, mode) if mode else next((m for m in modes if m.persists_mid_run), None)
    chosen = chosen or next(m for m in modes if m.runnable)
    if chosen.unavailable:
        return cli_output.usage_error(
            f"killpoint: --mode={chosen.name!r}: runtime {runtime!r} cannot run it: "
            f"{chosen.unavailable}"
        )
    mode = chosen.name
    engine = Engine(EngineConfig(store=store, keep="none"))
    # A mode that writes only at the end has no boundary mid-run: crash mid-run instead,
    # to show the loss.
    point = kinds.boundary(1) if chosen.persists_mid_run else kinds.model_request(2)
    cell = Cell(runtime, "research", mode, engine.stores.kind, Schedule((point,)))

    say(f"killpoint demo — scenario 'research' on the {runtime} runtime, mode {mode!r}")
    say("")
    say("1. Baseline: the scenario runs once without faults (twice, to prove it is deterministic).")
    base = engine.baseline(cell.row)
    if base.problem or base.nondeterministic:
        say(f"   the baseline failed: {base.problem or base.nondeterministic}", outcome=True)
        return 1
    run = next(iter((base.session or {}).get("runs", {}).values()))
    say(
        f"   {run['status']} with {len(run['messages'])} messages, {count(base.checkpoints, 'checkpoint')}, "
        f"{sum(base.effects.values())} tool executions."
    )
    say("")
    say(f"2. Start a worker and stop it at {point}: a gate parks it there, the store is polled")
    say("   to confirm the checkpoint landed, then its whole process group gets SIGKILL.")
    result = engine.run_cell(cell)
    for event in result.timeline:
        say(f"   {offset(event.t):>10}  {event.text}")
    say("")
    say("3. The store right after the kill:")
    crash = result.store_at_crash or {}
    if "session" in crash and crash["session"] is None:
        say(f"   no session row and no run row; checkpoints: {crash.get('checkpoints')}")
    elif not crash.get("runs"):
        say(
            f"   no run row (session {SESSION_ID!r} exists); checkpoints: {crash.get('checkpoints')}"
        )
    for r in crash.get("runs", []):
        say(
            f"   run {r['run']}: status {r['status']}, {r['messages']} messages, "
            f"last_checkpoint_at_message_index {r['last_checkpoint_at_message_index']}, "
            f"{r['tool_executions']} tool executions"
        )
    say("")
    say("4. Verdict, after continuing in place in a fresh worker and comparing with the baseline:")
    say(f"   {result.verdict} ({'expected' if result.expected else 'UNEXPECTED'})", outcome=True)
    if result.detail:
        say(f"   {result.detail}")
    say(f"   duplicate side effects: {result.duplicates} (bound for this crash: {result.bound})")
    say(f"   worker exit codes: {result.exit_codes}")
    say("", outcome=True)
    say(f"Replay this cell: {result.replay}", outcome=True)
    return 0 if result.expected else 1
