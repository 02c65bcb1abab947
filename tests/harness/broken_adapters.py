"""Reference adapters with one defect each, for `killpoint check-adapter`: each is caught
by exactly one of its checks (`tests.harness.broken_adapters:NAME`)."""

from __future__ import annotations

import time
from typing import Any

from killpoint.adapters.checkpoint_gates import CheckpointGates
from killpoint.adapters.factory import agent_adapter
from killpoint.adapters.reference import ReferenceAdapter, ReferenceDriver
from killpoint.runtime import Agent
from killpoint.values.modes import RUNS, TOOL, TOOL_BATCH, Mode


class NeverStartsDriver(ReferenceDriver):
    async def start(self, input: str, *, session_id: str, run_id: str) -> Any:
        raise RuntimeError("this driver cannot start a run")


class NeverStarts(ReferenceAdapter):
    """baseline: the driver raises on start."""

    driver_class = NeverStartsDriver


class Unnormal(ReferenceAdapter):
    """normal form: the runs lack their tool executions."""

    def read_session(self, store_url: str, session_id: str) -> Any:
        session = super().read_session(store_url, session_id)
        for run in (session or {}).get("runs", {}).values():
            del run["tool_executions"]
        return session


class Ungated(ReferenceAdapter):
    """checkpoint gates: instrument() forgets to wrap the store's write."""

    def instrument(self, checkpoints: CheckpointGates) -> None:
        return None


class Overcounting(ReferenceAdapter):
    """progress: counts one checkpoint more than landed."""

    def progress(self, store_url: str, session_id: str) -> int:
        return super().progress(store_url, session_id) + 1


class Misdeclared(ReferenceAdapter):
    """mode: tool-batch declared as writing only at the end."""

    modes = (
        RUNS,
        Mode("tool-batch", "declared (wrongly) as written at the end", persists_mid_run=False),
        TOOL,
    )


@agent_adapter
def ignores_mode(**kwargs: Any) -> Agent:
    """mode: a user's factory that builds every agent checkpoint="runs", whatever mode the
    row runs (its tool-batch row writes only at the end)."""
    return Agent(**{**kwargs, "checkpoint": "runs"})


@agent_adapter
def always_batches(**kwargs: Any) -> Agent:
    """mode, the other way: every agent checkpoint="tool-batch" (its runs row persists
    mid-run)."""
    return Agent(**{**kwargs, "checkpoint": "tool-batch"})


class Stamped(ReferenceAdapter):
    """deterministic: a reading time in every run, not in `excluded`."""

    def read_session(self, store_url: str, session_id: str) -> Any:
        session = super().read_session(store_url, session_id)
        for run in (session or {}).get("runs", {}).values():
            run["read_at"] = time.time_ns()
        return session


class NoResumeDriver(ReferenceDriver):
    async def resume(self, run_id: str, *, session_id: str, confirmations: Any) -> Any:
        raise NotImplementedError("resume is not written yet")


class Unresumable(ReferenceAdapter):
    """resume: resume() raises."""

    driver_class = NoResumeDriver


assert TOOL_BATCH.persists_mid_run  # what Misdeclared gets wrong


MARKUP_ERROR = "the store said [/] and [bold]loud[/bold] " + "and so on " * 40


class BracketedDriver(ReferenceDriver):
    async def start(self, input: str, *, session_id: str, run_id: str) -> Any:
        raise RuntimeError(MARKUP_ERROR)


class Bracketed(ReferenceAdapter):
    """Not for check-adapter: a runtime error whose text reads like rich markup."""

    driver_class = BracketedDriver


# In a raising read's message, as a store URL would be: the finding must not show it.
PASSWORD = "hunter2-not-for-reports"


class RaisingInspect(ReferenceAdapter):
    """inspect: raises on any store, the store's URL with its password in the message."""

    def inspect(self, store_url: str, session_id: str) -> Any:
        raise RuntimeError(f"cannot open postgresql://kp:{PASSWORD}@db.example/kp")


class RaisingAfterCrash(ReferenceAdapter):
    """Reads an ended session, and raises on one a crash left RUNNING (check-adapter reads
    only ended ones: only a matrix cell meets it)."""

    def read_session(self, store_url: str, session_id: str) -> Any:
        session = super().read_session(store_url, session_id)
        if any(r["status"] == "RUNNING" for r in (session or {}).get("runs", {}).values()):
            raise KeyError("pending_confirmations")
        return session


class TextProgress(ReferenceAdapter):
    """progress: returns the count as a string ("5"), not an int."""

    def progress(self, store_url: str, session_id: str) -> Any:
        return str(super().progress(store_url, session_id))


class RaisingDriverFactory(ReferenceAdapter):
    """baseline: driver() raises before the run begins."""

    def driver(
        self, scenario: Any, store_url: str, mode: str, ledger: Any, *, lease_seconds: float
    ) -> Any:
        raise ValueError("no driver for this store")


class RaisingInstrument(ReferenceAdapter):
    """baseline: instrument() raises before the run begins."""

    def instrument(self, checkpoints: CheckpointGates) -> None:
        raise RuntimeError("cannot wrap the store's write")
