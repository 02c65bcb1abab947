"""The reference runtime under test."""

from __future__ import annotations

from collections.abc import Mapping

from runtime import Agent, OpenAIResponses, RunOutput, Store, Tool
from scenarios import Ledger, RunResult, Scenario, ToolEnv

SCRIPTED_API_KEY = "sk-killpoint-scripted-model"


class ReferenceDriver:
    """Builds a reference `Agent` from a scenario and drives it (scenarios.Driver)."""

    def __init__(
        self,
        scenario: Scenario,
        store: Store | str,
        mode: str,
        ledger: Ledger,
        *,
        model_id: str = "gpt-4.1-mini",
        lease_seconds: float = 30.0,
    ) -> None:
        self.scenario = scenario
        tools = [
            Tool.from_function(fn, requires_confirmation=fn.__name__ in scenario.confirm)
            for fn in scenario.build_tools(ToolEnv(ledger))
        ]
        self.agent = Agent(
            name=scenario.name,
            model=OpenAIResponses(
                model_id, api_key=SCRIPTED_API_KEY, max_retries=scenario.max_retries
            ),
            db=store,
            tools=tools,
            instructions=scenario.instructions,
            checkpoint=mode,
            lease_seconds=lease_seconds,
        )

    async def start(self, input: str, *, session_id: str, run_id: str) -> RunResult:
        return _result(await self.agent.arun(input, session_id=session_id, run_id=run_id))

    async def resume(
        self, run_id: str, *, session_id: str, confirmations: Mapping[str, bool]
    ) -> RunResult:
        if not confirmations:
            # Resumed after a crash while PAUSED: answer as the scenario says.
            stored = self.agent.get_run(run_id)
            if stored is not None and stored.pending_confirmations:
                names = _call_names(stored)
                confirmations = {
                    cid: self.scenario.confirm.get(names.get(cid, ""), True)
                    for cid in stored.pending_confirmations
                }
        out = await self.agent.acontinue_run(run_id, session_id, confirmations=confirmations)
        return _result(out)

    def cancel(self, run_id: str) -> None:
        self.agent.cancel_run(run_id)


def _call_names(out: RunOutput) -> dict[str, str]:
    return {c.call_id: c.name for m in out.messages for c in m.tool_calls}


def _result(out: RunOutput) -> RunResult:
    names = _call_names(out)
    return RunResult(
        run_id=out.run_id,
        status=out.status.value,
        content=out.content,
        pending=[(cid, names.get(cid, "")) for cid in out.pending_confirmations],
    )
