"""A correct runtime whose second caller waits: a variant of the reference runtime that, like
DBOS's recovery, answers a caller that finds the run owned elsewhere with the owner's result.

- A second resumer whose claim is refused (another worker holds the run) does not fail: it
  waits until the owner has ended the run and returns what the store then holds.
- A stale worker (paused, woken after a takeover) still has its writes rejected and is
  stopped by its fence; then it too waits for the owner and returns the owner's result.
- A caller that finds the run already ended returns it as it is.

Nothing here drives the run twice or writes after a takeover: killpoint must not say it
does because both callers returned a status (`tests.harness.patient_runtime:patient`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from killpoint.adapters.reference import ReferenceAdapter, ReferenceDriver
from killpoint.runtime import Agent, RunOwnedElsewhere, RunStatus
from killpoint.runtime.errors import RunNotContinuable
from killpoint.runtime.messages import RunOutput

POLL = 0.02  # seconds between two readings of the run's row while the owner drives it


class PatientAgent(Agent):
    async def arun(
        self, input: str, session_id: str | None = None, run_id: str | None = None
    ) -> RunOutput:
        try:
            return await super().arun(input, session_id=session_id, run_id=run_id)
        except RunOwnedElsewhere:
            if run_id is None:
                raise
            return await self.owner_result(run_id)

    async def acontinue_run(
        self,
        run_id: str,
        session_id: str,
        *,
        confirmations: Mapping[str, bool] | None = None,
    ) -> RunOutput:
        try:
            return await super().acontinue_run(run_id, session_id, confirmations=confirmations)
        except RunOwnedElsewhere:
            return await self.owner_result(run_id)
        except RunNotContinuable:
            ended = self.get_run(run_id)
            if ended is None or ended.status not in (RunStatus.COMPLETED, RunStatus.CANCELLED):
                raise
            return ended  # the owner finished it before this caller came: its result

    async def owner_result(self, run_id: str) -> RunOutput:
        """The run as its owner leaves it: read until it is no longer RUNNING."""
        while True:
            stored = self.get_run(run_id)
            if stored is not None and stored.status is not RunStatus.RUNNING:
                return stored
            await asyncio.sleep(POLL)


class PatientDriver(ReferenceDriver):
    agent_class = PatientAgent


class PatientAdapter(ReferenceAdapter):
    name = "patient"
    driver_class = PatientDriver


def patient() -> PatientAdapter:
    return PatientAdapter()
