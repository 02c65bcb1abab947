"""A sound variant of the reference runtime that runs a batch's calls one at a time, last
call first (a runtime may start them in any order it likes): mid-batch points must hold
call i in flight with the calls it starts after it not started, by the order the runtime
starts them, not by call index (`tests.harness.reverse_runtime:reverse`)."""

from __future__ import annotations

import asyncio
from itertools import pairwise

from killpoint.adapters.reference import ReferenceAdapter, ReferenceDriver
from killpoint.runtime import Agent
from killpoint.runtime.agent import _RunState
from killpoint.runtime.messages import Message, ToolCall


class ReverseAgent(Agent):
    _ended: dict[str, asyncio.Event]
    _after: dict[str, str]

    async def _run_batch(self, st: _RunState, batch: Message) -> None:
        calls = batch.tool_calls
        self._ended = {c.call_id: asyncio.Event() for c in calls}
        # Each call waits for the call after it: the last starts first.
        self._after = {c.call_id: n.call_id for c, n in pairwise(calls)}
        for call_id in st.executions:  # results already durable ("tool" mode): not run
            if call_id in self._ended:
                self._ended[call_id].set()
        await super()._run_batch(st, batch)

    async def _execute(self, st: _RunState, call: ToolCall, key: str) -> tuple[str, str]:
        later = self._after.get(call.call_id)
        if later is not None:
            await self._ended[later].wait()
        try:
            return await super()._execute(st, call, key)
        finally:
            self._ended[call.call_id].set()


class ReverseDriver(ReferenceDriver):
    agent_class = ReverseAgent


class ReverseAdapter(ReferenceAdapter):
    name = "reverse"
    driver_class = ReverseDriver


def reverse() -> ReferenceAdapter:
    return ReverseAdapter()
