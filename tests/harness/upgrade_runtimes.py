"""Deliberately broken new versions of the reference runtime: a corpus recorded with the
reference runtime and checked with each must be caught in the group that names it.

`tests.harness.upgrade_runtimes:NAME` as `--runtime` of `killpoint corpus check`.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Mapping
from typing import Any

from sqlalchemy import update

from killpoint.adapters.reference import ReferenceAdapter
from killpoint.runtime import Agent, Store
from killpoint.runtime.errors import RunNotContinuable
from killpoint.runtime.messages import RunOutput
from killpoint.runtime.store import schema
from killpoint.runtime.store.store import StoredRun
from tests.harness.broken_runtimes import _adapter, rerun_finished


class RefusingStore(Store):
    """A new version that cannot read an older version's runs and says so, before it
    writes anything."""

    def claim(self, run_id: str, session_id: str, owner: Any, *, lease_seconds: float) -> StoredRun:
        raise RunNotContinuable(
            f"runtime: run {run_id!r} was stored by an older version of this runtime; "
            "migrate the store before resuming it"
        )


class MisreadingStore(Store):
    """A new version that loads old rows wrongly (a changed encoding of a tool result,
    read as empty) and writes them back so, then goes on as if nothing were amiss."""

    def claim(self, run_id: str, session_id: str, owner: Any, *, lease_seconds: float) -> StoredRun:
        run = super().claim(run_id, session_id, owner, lease_seconds=lease_seconds)
        misread = [
            dataclasses.replace(m, content="") if m.role == "tool" else m for m in run.messages
        ]
        with self.writing() as conn:
            for idx, (old, new) in enumerate(zip(run.messages, misread, strict=True)):
                if old != new:
                    conn.execute(
                        update(schema.run_messages)
                        .where(
                            schema.run_messages.c.run_id == run_id,
                            schema.run_messages.c.idx == idx,
                        )
                        .values(body=new.to_json())
                    )
        run.messages = misread
        return run


class StrandingAgent(Agent):
    """A new version whose resume hands back the stored run as it is, RUNNING, and drives
    nothing (a recovery scoped to the version that started the run)."""

    async def acontinue_run(
        self, run_id: str, session_id: str, *, confirmations: Mapping[str, bool] | None = None
    ) -> RunOutput:
        out = self.get_run(run_id)
        assert out is not None
        return out


class HangingAgent(Agent):
    """A new version whose resume of an old run never returns (it waits on a migration
    lock nothing will release)."""

    async def acontinue_run(
        self, run_id: str, session_id: str, *, confirmations: Mapping[str, bool] | None = None
    ) -> RunOutput:
        threading.Event().wait()
        raise AssertionError("not reached")


class MalformedAdapter(ReferenceAdapter):
    """A new adapter whose reader gives an unfinished run's status as a number: outside
    the normal form, whatever the runtime stored (an uninterrupted run, read when it has
    ended, is read right)."""

    name = "malformed-reader"

    def read_session(self, store_url: str, session_id: str) -> dict[str, Any] | None:
        session = super().read_session(store_url, session_id)
        for run in (session or {}).get("runs", {}).values():
            if run["status"] == "RUNNING":
                run["status"] = 3
        return session


class MalformedEverywhereAdapter(ReferenceAdapter):
    """A new adapter whose reader gives every run's status as a number: its own
    uninterrupted run cannot be read either."""

    name = "malformed-everywhere"

    def read_session(self, store_url: str, session_id: str) -> dict[str, Any] | None:
        session = super().read_session(store_url, session_id)
        for run in (session or {}).get("runs", {}).values():
            run["status"] = 3
        return session


def hanging() -> ReferenceAdapter:
    return _adapter("hanging-on-old-runs", agent=HangingAgent)


def malformed() -> ReferenceAdapter:
    return MalformedAdapter()


def malformed_everywhere() -> ReferenceAdapter:
    return MalformedEverywhereAdapter()


def stranding() -> ReferenceAdapter:
    return _adapter("stranding-old-runs", agent=StrandingAgent)


def refusing() -> ReferenceAdapter:
    return _adapter("refusing-old-rows", store=RefusingStore)


def misreading() -> ReferenceAdapter:
    return _adapter("misreading-old-rows", store=MisreadingStore)


def rerunning() -> ReferenceAdapter:
    """A new version that silently re-runs every finished tool on resume."""
    return rerun_finished()


__all__ = [
    "hanging",
    "malformed",
    "malformed_everywhere",
    "misreading",
    "refusing",
    "rerunning",
    "stranding",
]
