"""optimisticagent: jsonagent (tests/harness/json_file_runtime.py, its file written
atomically) with the two traits of ADK's DatabaseSessionService that widened the adapter
contract, and nothing of ADK:

- no run ownership, but an optimistic check on every write: a writer whose copy of the
  run is older than the store's (another process wrote since it loaded) is refused
  (`StaleRun`), under a lock so that the check and the write are one step. A paused
  worker woken before a takeover's first write therefore wins, and the takeover fails;
- a closing write after the final status (ADK's `end_of_agent` after the final answer):
  the run is durably COMPLETED one write before its last.

`--runtime tests.harness.optimistic_runtime:adapter`.
"""

from __future__ import annotations

import fcntl
import json
import os
from dataclasses import asdict
from pathlib import Path

from killpoint import Ledger, Scenario, ToolEnv
from killpoint.stores.sqlite import path_of
from tests.harness.json_file_runtime import Agent as JsonAgent
from tests.harness.json_file_runtime import AtomicJsonAdapter, JsonDriver, JsonStore, Run

LOCK = "runs.lock"


class StaleRun(Exception):
    """The run changed in the store since this writer loaded it."""


class OptimisticStore(JsonStore):
    def save(self, run: Run) -> None:
        if self.gates is None:
            self._checked(run)
            return
        # The gates stand outside the lock: a worker paused at `writing` holds nothing.
        with self.gates.write():
            self._checked(run)

    def _checked(self, run: Run) -> None:
        fd = os.open(self.path.parent / LOCK, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            runs = self.runs()
            stored = runs.get(run.run_id)
            if stored is not None and int(stored["checkpoints"]) != run.checkpoints:
                raise StaleRun(
                    f"run {run.run_id} has {stored['checkpoints']} checkpoints in the store, "
                    f"this writer loaded {run.checkpoints}"
                )
            runs[run.run_id] = {**asdict(run), "checkpoints": run.checkpoints + 1}
            self._write(json.dumps(runs, indent=1).encode())
        finally:
            os.close(fd)
        run.checkpoints += 1


class ClosingAgent(JsonAgent):
    def _end(self, run: Run, status: str, content: str | None) -> Run:
        super()._end(run, status, content)
        if status == "COMPLETED":
            self.store.save(run)  # the closing write: nothing new, one more checkpoint
        return run


class OptimisticAdapter(AtomicJsonAdapter):
    name = "optimisticagent"

    def driver(
        self, scenario: Scenario, store_url: str, mode: str, ledger: Ledger, *, lease_seconds: float
    ) -> JsonDriver:
        store = OptimisticStore(Path(path_of(store_url)).parent, self.gates, self.how)
        store.create()
        tools = scenario.build_tools(ToolEnv(ledger))
        return JsonDriver(ClosingAgent(store, tools, mode, scenario.max_retries))


adapter = OptimisticAdapter()
