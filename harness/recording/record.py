"""`killpoint record`: run a user's agent once against its real provider, through the
recording proxy at a local address, and write what it said as a cassette.

The agent is a runtime as the matrix names one (a built-in, or `package.module:adapter`),
built and driven by its adapter in this process: its model clients are pointed at the
proxy by the environment (OPENAI_BASE_URL, ANTHROPIC_BASE_URL, KILLPOINT_MODEL_URL), its
API keys stay the environment's own, its tools are real (a scenario's, or the agent's own
marked with `killpoint.effect`). When every run has come to rest, the store is read back:
how each run ended (status, answer, tool calls) is the cassette's expected end. Nothing
a secret was seen in is written: headers without credentials, every credential value and
every secret of the environment masked wherever it appears.
"""

from __future__ import annotations

import asyncio
import inspect
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from killpoint.adapters.blame import AdapterFault, checked_session
from killpoint.adapters.protocol import RuntimeAdapter
from killpoint.adapters.registry import load_adapter
from killpoint.errors import KillpointError, RecordError
from killpoint.judge.expectations import final_answer, made_calls
from killpoint.redaction import redact_tree, replacer
from killpoint.scenarios import Expected, Ledger, RunResult, Scenario, drive
from killpoint.scenarios import cassette as cassettes
from killpoint.scenarios.cassette.recorder import ANTHROPIC_URL, OPENAI_URL, Recorder, Upstream
from killpoint.scenarios.effects import use_ledger
from killpoint.scenarios.model_server import ModelServer, environ
from killpoint.values.durations import duration
from killpoint.values.modes import find
from killpoint.values.scenario_refs import CASSETTE, resolve_scenario

# The engine's session id (killpoint.engine.engine.SESSION_ID): the recorded run stores
# what a replayed baseline stores, its run ids included, so the two compare field by field.
SESSION_ID = "killpoint-session"
MASK = "[redacted]"


@dataclass(frozen=True)
class Plan:
    """What to record: the runtime, the scenario whose tools and inputs it runs (or the
    agent's own inputs), where the provider is, what is never written."""

    runtime: str
    out: Path
    scenario: str | None = None
    inputs: tuple[str, ...] = ()
    mode: str | None = None
    name: str | None = None
    provider: str | None = None  # an OpenAI-compatible base URL
    anthropic: str | None = None
    redact_headers: tuple[str, ...] = ()
    redact_paths: tuple[str, ...] = ()
    timeout: float = 600.0
    agent_version: str | None = None


@dataclass
class Recording:
    """What a recording made: the cassette (as written), and what the run left."""

    cassette: cassettes.Cassette
    path: Path
    results: list[RunResult]
    session: dict[str, Any] | None
    unrecordable: list[str] = field(default_factory=list)
    seconds: float = 0.0


def _scenario(plan: Plan) -> Scenario:
    if plan.scenario is not None and plan.scenario.startswith(CASSETTE):
        raise RecordError(
            f"killpoint record: --scenario {plan.scenario!r} is a cassette; record from the "
            "agent itself (--scenario NAME for a scenario's tools, or --input TEXT)"
        )
    if plan.scenario is None and not plan.inputs:
        raise RecordError(
            "killpoint record: nothing to send the agent: give --input TEXT (once per run) or "
            "--scenario NAME (a scenario's tools and inputs)"
        )
    name = plan.name or (None if plan.scenario else plan.out.stem)
    if plan.scenario is not None:
        base = resolve_scenario(plan.scenario)
        if not plan.inputs and name is None:
            return base
        inputs = plan.inputs or base.inputs
        return Scenario(
            **{
                **{f: getattr(base, f) for f in base.__dataclass_fields__},
                "name": name or base.name,
                "inputs": inputs,
                "expected": tuple(Expected() for _ in inputs),
            }
        )
    return Scenario(
        name=name or "agent",
        description=f"the agent's own, recorded into {plan.out}",
        script=_unscripted,
        tools=lambda env: [],
        inputs=plan.inputs,
        expected=tuple(Expected() for _ in plan.inputs),
    )


def _unscripted(conversation: Any) -> Any:
    raise RecordError("killpoint record: the real provider answers a recording, not a script")


def _mode(adapter: RuntimeAdapter, wanted: str | None) -> str:
    if wanted is not None:
        mode = find(adapter.modes, wanted)
        if mode is None or not mode.runnable:
            names = ", ".join(m.name for m in adapter.modes if m.runnable)
            raise RecordError(
                f"killpoint record: --mode {wanted!r} is not a mode runtime {adapter.name!r} "
                f"runs; choose from {names}"
            )
        return wanted
    # The conversation is the same in every mode (modes change what is stored, not what
    # is asked): the runtime's first.
    return next(m.name for m in adapter.modes if m.runnable)


def _shown_url(url: str) -> str:
    """A provider URL as a cassette may show it: no user, password, query or fragment."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, host, parts.path, "", ""))


def upstream_of(plan: Plan, env: dict[str, str] | None = None) -> Upstream:
    """Where the real provider is: the plan's, else the environment's base URLs, else the
    public APIs."""
    env = dict(os.environ) if env is None else env
    return Upstream(
        openai=plan.provider or env.get("OPENAI_BASE_URL") or OPENAI_URL,
        anthropic=plan.anthropic or env.get("ANTHROPIC_BASE_URL") or ANTHROPIC_URL,
    )


def masker(secrets: Sequence[str]) -> Any:
    """Every form of every secret (the credentials seen, the environment's) replaced, in
    every string of a JSON value, keys too."""
    replace = replacer(secrets, MASK)
    return lambda value: redact_tree(value, replace)


def record(plan: Plan) -> Recording:
    """Run the agent once through the recording proxy and write its cassette to `plan.out`.
    RecordError says why nothing was written."""
    t0 = time.monotonic()
    try:
        redactions = cassettes.Redactions(plan.redact_headers, plan.redact_paths)
    except cassettes.PathError as exc:
        raise RecordError(f"killpoint record: {exc}") from None
    adapter = load_adapter(plan.runtime)
    scenario = _scenario(plan)
    mode = _mode(adapter, plan.mode)
    unsupported = adapter.unsupported(scenario, mode)
    if unsupported:
        raise RecordError(
            f"killpoint record: runtime {plan.runtime!r} cannot run it: {unsupported}"
        )
    upstream = upstream_of(plan)
    keys = {
        "openai": os.environ.get("OPENAI_API_KEY", ""),
        "anthropic": os.environ.get("ANTHROPIC_API_KEY", ""),
    }
    recorder = Recorder(upstream, redactions, keys=keys, timeout=plan.timeout)
    work = Path(tempfile.mkdtemp(prefix="killpoint-record-"))
    try:
        url = f"sqlite:///{work / 'store.db'}"
        ledger = Ledger(work / "ledger.jsonl", scenario.name)
        with ModelServer(recorder) as server:
            names = {
                **Recorder.environ(server.url, os.environ.get("NO_PROXY", "")),
                **use_ledger(ledger),
            }
            with environ(names):
                results = _run(adapter, scenario, url, mode, ledger, recorder, plan.timeout)
        session = _read(adapter, plan.runtime, url)
    finally:
        recorder.close()
        shutil.rmtree(work, ignore_errors=True)
    if recorder.unreached:
        # The agent went through the proxy; the provider behind it did not answer (a
        # cassette without those requests would not be the run the agent had).
        first = recorder.unreached[0]
        flag = "--provider" if first.base == upstream.openai else "--anthropic-provider"
        raise RecordError(
            f"killpoint record: the provider at {_shown_url(first.base)} could not be reached "
            f"({first.error}): check {flag} and the network; nothing was written"
        )
    refused = [i for i in recorder.interactions if i.response.status in (401, 403)]
    if refused:
        raise RecordError(
            f"killpoint record: the provider refused the agent's requests "
            f"({refused[0].response.status} to {refused[0].path}): set OPENAI_API_KEY (or "
            "ANTHROPIC_API_KEY) to your key for it; nothing was written"
        )
    if not recorder.interactions and recorder.unrecordable:
        raise RecordError(
            "killpoint record: none of the requests the agent sent through the recording proxy "
            f"is one a replay can answer ({', '.join(recorder.unrecordable[:3])}); nothing "
            "was written"
        )
    if not recorder.interactions:
        raise RecordError(
            "killpoint record: the agent sent no request through the recording proxy: its model "
            "client must read OPENAI_BASE_URL or ANTHROPIC_BASE_URL (or killpoint.model_url()) "
            "rather than a base URL of its own; nothing was written"
        )
    runs = list((session or {}).get("runs", {}).values())
    if not runs:
        raise RecordError(
            f"killpoint record: runtime {plan.runtime!r} stored no run of session "
            f"{SESSION_ID!r} (its results: {', '.join(r.status for r in results) or 'none'}); "
            "nothing was written"
        )
    outcomes = tuple(
        cassettes.Outcome(
            str(run.get("status")),
            final_answer(run) if run.get("status") == "COMPLETED" else None,
            tuple(made_calls(run)),
        )
        for run in runs
    )
    recorded = {
        "runtime": plan.runtime,
        "mode": mode,
        "provider": _shown_url(upstream.openai),
        "anthropic_provider": _shown_url(upstream.anthropic),
        "agent_version": plan.agent_version,
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "unrecordable": list(recorder.unrecordable),
    }
    cassette = cassettes.Cassette(
        name=scenario.name,
        inputs=scenario.inputs[: len(runs)],
        outcomes=outcomes,
        interactions=tuple(recorder.interactions),
        scenario=plan.scenario if plan.scenario is not None else None,
        redactions=redactions,
        recorded={k: v for k, v in recorded.items() if v not in (None, [])},
    )
    masked = masker(sorted(recorder.secrets))(cassette.to_json())
    cassettes.dump(masked, plan.out)
    written = cassettes.from_json(masked)
    return Recording(
        written,
        plan.out,
        results,
        session,
        list(recorder.unrecordable),
        round(time.monotonic() - t0, 3),
    )


def _run(
    adapter: RuntimeAdapter,
    scenario: Scenario,
    url: str,
    mode: str,
    ledger: Ledger,
    recorder: Recorder,
    timeout: float,
) -> list[RunResult]:
    async def go() -> list[RunResult]:
        driver = adapter.driver(scenario, url, mode, ledger, lease_seconds=timeout)
        try:
            return await asyncio.wait_for(
                drive(scenario, driver, recorder, session_id=SESSION_ID), timeout
            )
        finally:
            await _close(driver)

    try:
        return asyncio.run(go())
    except TimeoutError:
        raise RecordError(
            f"killpoint record: the agent's runs did not come to rest within {duration(timeout)} "
            "(--timeout); nothing was written"
        ) from None
    except KillpointError:
        raise
    except Exception as exc:
        raise RecordError(
            f"killpoint record: the agent raised {type(exc).__name__}: {exc}; nothing was written"
        ) from exc


async def _close(driver: Any) -> None:
    """Let a driver close what it opened (LangGraph's saver, agno's engine)."""
    for name in ("aclose", "dispose", "close"):
        method = getattr(driver, name, None)
        if method is None:
            continue
        result = method()
        if inspect.isawaitable(result):
            await result
        return


def _read(adapter: RuntimeAdapter, runtime: str, url: str) -> dict[str, Any] | None:
    try:
        session = adapter.read_session(url, SESSION_ID)
        checked_session(session, runtime)
    except AdapterFault as exc:
        raise RecordError(f"killpoint record: {exc}; nothing was written") from None
    except Exception as exc:
        raise RecordError(
            f"killpoint record: reading the store back raised {type(exc).__name__}: {exc}; "
            "nothing was written"
        ) from exc
    return dict(session) if session is not None else None


__all__ = ["SESSION_ID", "Plan", "RecordError", "Recording", "record", "upstream_of"]
