"""A sound variant of the reference runtime whose second caller of continue_run waits for
the run's owner and returns its result (as DBOS's second recoverer does), instead of
being refused: it drives nothing, so no ownership check may call it a second driver."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping

from killpoint.adapters.reference import ReferenceAdapter, ReferenceDriver
from killpoint.runtime import Agent, RunOutput, RunStatus
from killpoint.runtime.errors import RunNotContinuable, RunOwnedElsewhere

# How often a waiting caller reads the run's row again (the runtime's own polling).
POLL = 0.05


class WaitingAgent(Agent):
    async def acontinue_run(
        self, run_id: str, session_id: str, *, confirmations: Mapping[str, bool] | None = None
    ) -> RunOutput:
        while True:
            try:
                return await super().acontinue_run(run_id, session_id, confirmations=confirmations)
            except RunOwnedElsewhere:
                await asyncio.sleep(POLL)
            except RunNotContinuable:
                ended = self.get_run(run_id)
                if ended is None or ended.status not in (RunStatus.COMPLETED, RunStatus.CANCELLED):
                    raise
                return ended


class WaitingDriver(ReferenceDriver):
    agent_class = WaitingAgent


class WaitingAdapter(ReferenceAdapter):
    name = "waiting"
    driver_class = WaitingDriver


def waiting() -> ReferenceAdapter:
    return WaitingAdapter()
