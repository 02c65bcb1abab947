"""The reference runtime, unchanged, with its two racing resumers put in the order that
made one fresh-clone `make matrix` say `two-drivers` on
`reference/confirm/tool-batch/sqlite/double-resume:3` (1 cell in 2,087, never alone).

Killed after checkpoint 3 of `confirm`, the run is RUNNING; its next model turn asks for
a call that needs confirmation, so the winner of the race drives one turn and leaves the
run PAUSED, released. The loser, slower to start, then finds a PAUSED run, answers it as
the scenario says and takes it (a PAUSED run is anyone's to continue), before the winner
comes back to answer its own pause and is refused. One driver at a time: the winner asked
for turn 3, the loser for turn 4, and nobody drove the same step twice.

Here the order is forced by what the store holds, not by timing: the first resumer to
create a marker file next to the store leads; the other waits until the row is PAUSED
with calls pending, and the leader answers its own pause only once the row's version
has moved past it (the other's claim).
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable, Mapping
from pathlib import Path

from sqlalchemy.engine import make_url

from killpoint.adapters.reference import ReferenceAdapter, ReferenceDriver
from killpoint.runtime import RunStatus
from killpoint.runtime.store.store import StoredRun
from killpoint.scenarios import RunResult

POLL = 0.02  # seconds between two readings of the run's row (a wait on a row)


class HandoverDriver(ReferenceDriver):
    leads = False

    async def resume(
        self, run_id: str, *, session_id: str, confirmations: Mapping[str, bool]
    ) -> RunResult:
        if not confirmations:  # a continue after the crash: one of the two racers
            if self.lead():
                self.leads = True
            else:
                await self.until(run_id, lambda r: r.status is RunStatus.PAUSED)
        elif self.leads:
            paused = self.row(run_id).version
            await self.until(run_id, lambda r: r.version > paused)
        return await super().resume(run_id, session_id=session_id, confirmations=confirmations)

    def lead(self) -> bool:
        database = make_url(self.agent.db.url).database
        assert database, "this variant runs on a SQLite file"
        try:
            os.close(os.open(Path(database).with_suffix(".leader"), os.O_CREAT | os.O_EXCL))
        except FileExistsError:
            return False
        return True

    def row(self, run_id: str) -> StoredRun:
        stored = self.agent.db.read_run(run_id, whole=False)
        assert stored is not None
        return stored

    async def until(self, run_id: str, holds: Callable[[StoredRun], bool]) -> None:
        while not holds(self.row(run_id)):
            await asyncio.sleep(POLL)


class HandoverAdapter(ReferenceAdapter):
    name = "handover"
    driver_class = HandoverDriver


def handover() -> ReferenceAdapter:
    return HandoverAdapter()
