"""Google ADK (PyPI `google-adk` 2.13), unmodified, as a runtime under test: an `LlmAgent`
in an `App` whose invocations are resumable (`ResumabilityConfig(is_resumable=True)`),
its sessions in `DatabaseSessionService` on SQLite or PostgreSQL, its model ADK's own
`LiteLlm` speaking Chat Completions to the scripted model at a local address.

- agent.py: the agent built from a scenario, and the Driver (start, resume, cancel);
- writes.py: the gates around append_event, ADK's one durable write (workers only);
- reading.py: the engine's reads of ADK's tables;
- normal.py: a session's events in the normal form, and the invariants of its history.

ADK has one way to persist a run: every event appended as it happens, so one mode. It has
no run ownership: a session is guarded by an optimistic check (the session's update time
read before each append; a writer whose copy is older gets StaleSessionError), not by a
lease. docs/adk.md says what the crash matrix finds with that design.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Sequence
from typing import Any

from killpoint.adapters.checkpoint_gates import CheckpointGates
from killpoint.adapters.protocol import RuntimeAdapter
from killpoint.errors import ModeError
from killpoint.values.findings import Finding
from killpoint.values.modes import Mode

# LiteLLM fetches its model price map from the network when it is imported, unless told not
# to: set before anything of this package (import_problem, the forkserver's preloads)
# imports it.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

EVENTS = Mode(
    "events",
    "every event appended to the session as it happens (DatabaseSessionService."
    "append_event): the user's message, each model reply, each batch's function responses",
)
PER_CALL = Mode(
    "per-call",
    "each tool call's response durable as soon as the call returns",
    results_per_call=True,
    unavailable=(
        "ADK answers a batch's function calls with one event, appended after the last of "
        "them returned"
    ),
)
AT_END = Mode(
    "at-end",
    "nothing durable until the invocation ends",
    persists_mid_run=False,
    unavailable="DatabaseSessionService appends every event as it happens; ADK has no "
    "setting that holds them to the end",
)
MODES = (EVENTS, PER_CALL, AT_END)

PRELOAD_MODULES = (
    "killpoint.adapters.adk.agent",
    "killpoint.adapters.adk.normal",
    "killpoint.adapters.adk.writes",
    "litellm",
    "aiosqlite",
    "sqlalchemy.ext.asyncio",
    "sqlalchemy.dialects.sqlite.aiosqlite",
    "google.genai.types",
    "google.adk.agents",
    "google.adk.apps",
    "google.adk.runners",
    "google.adk.models.lite_llm",
    "google.adk.sessions.database_session_service",
)

DECLINED_KINDS: dict[str, str] = {}


def import_problem() -> str | None:
    """Why ADK cannot be used here (None: it can)."""
    try:
        import aiosqlite  # noqa: F401
        import google.adk.models.lite_llm
        import google.adk.runners
        import google.adk.sessions.database_session_service  # noqa: F401
        import litellm  # noqa: F401

        importlib.import_module("greenlet")  # SQLAlchemy's asyncio extension needs it
    except ImportError as exc:
        return str(exc)
    return None


class AdkAdapter(RuntimeAdapter):
    """killpoint's adapter for Google ADK."""

    name = "adk"
    modes: tuple[Mode, ...] = MODES
    excluded: tuple[str, ...] = ()
    preload_modules: tuple[str, ...] = ("killpoint.adapters.adk", *PRELOAD_MODULES)
    declined_kinds = DECLINED_KINDS
    # LiteLLM is not the openai SDK's transport: the scripted model at a local address.
    local_model = True

    def __init__(self) -> None:
        from killpoint.adapters.adk.normal import EXCLUDED

        self.excluded = EXCLUDED

    def __repr__(self) -> str:
        return "AdkAdapter()"

    def instrument(self, checkpoints: CheckpointGates) -> None:
        from killpoint.adapters.adk.writes import instrument

        instrument(checkpoints)

    def driver(
        self, scenario: Any, store_url: str, mode: str, ledger: Any, *, lease_seconds: float
    ) -> Any:
        # ADK has no lease: lease_seconds has nothing to set.
        from killpoint.adapters.adk.agent import AdkDriver

        if mode != EVENTS.name:
            raise ModeError(f"killpoint: adk mode {mode!r} is unknown; the one mode is 'events'")
        return AdkDriver(scenario, store_url, ledger)

    def unsupported(self, scenario: Any, mode: str) -> str | None:
        if scenario.confirm:
            return (
                "not built: ADK asks for a confirmation with a function call of its own "
                "(adk_request_confirmation) answered by a later message; this adapter does "
                "not drive it"
            )
        return None

    # -- reading back -------------------------------------------------------------------

    def progress(self, store_url: str, session_id: str) -> int:
        from killpoint.adapters.adk.reading import reader

        with reader(store_url) as r:
            return r.landed(session_id)

    def read_session(self, store_url: str, session_id: str) -> Any:
        from killpoint.adapters.adk.normal import session_of
        from killpoint.adapters.adk.reading import reader

        with reader(store_url) as r:
            exists, state = r.state(session_id)
            events = r.events(session_id)
        if not events:
            return None  # a session without an event holds no run
        return session_of(state if exists else None, events)

    def inspect(self, store_url: str, session_id: str) -> Sequence[str | Finding]:
        from killpoint.adapters.adk.normal import invariants
        from killpoint.adapters.adk.reading import reader

        with reader(store_url) as r:
            problems: list[str | Finding] = []
            broken = r.integrity()
            if broken is not None:
                problems.append(f"SQLite integrity_check: {broken}")
            problems.extend(invariants(r.events(session_id)))
        return problems

    def lease_deadline(self, store_url: str, session_id: str) -> float | None:
        return None  # ADK sessions have no owner and no lease


def adapter() -> AdkAdapter:
    return AdkAdapter()
