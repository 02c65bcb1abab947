# ruff: noqa: SIM300 - tests assert `expected == actual`
"""acontinue_run's refusals: typed errors whose message says why, and a store left as it was."""

from __future__ import annotations

import pytest
import respx

from killpoint.runtime import (
    Agent,
    RunNotContinuable,
    RunNotFound,
    RunOutput,
    RunStatus,
    Store,
)
from tests.helpers import function_call, make_model, message_item, serve, snapshot


def finished_run(
    openai_mock: respx.MockRouter, url: str, status: RunStatus
) -> tuple[Agent, RunOutput]:
    """A run that ended COMPLETED or CANCELLED, in session "s"."""
    holder: dict[str, Agent] = {}

    def work(run_id: str) -> str:
        """Work, and maybe ask to stop."""
        if status is RunStatus.CANCELLED:
            holder["agent"].cancel_run(run_id)
        return "worked"

    serve(openai_mock, [[function_call("w1", "work", {})], [message_item("finished")]])
    agent = Agent("cont", make_model(), url, tools=[work], checkpoint="tool-batch")
    holder["agent"] = agent
    out = agent.run("work", session_id="s")
    assert status == out.status
    return agent, out


@pytest.mark.parametrize("status", [RunStatus.COMPLETED, RunStatus.CANCELLED])
def test_finished_runs_are_not_continuable_and_the_store_is_unchanged(
    openai_mock: respx.MockRouter, store_url: str, status: RunStatus
) -> None:
    """COMPLETED and CANCELLED runs raise RunNotContinuable naming the status; every row of
    every table is the same afterwards (version, lease, timestamps included)."""
    agent, out = finished_run(openai_mock, store_url, status)
    calls_before = len(openai_mock.calls)
    before = snapshot(store_url)

    with pytest.raises(RunNotContinuable) as caught:
        agent.continue_run(out.run_id, "s")

    assert f"is {status.value} and cannot be continued" in str(caught.value)
    assert out.run_id in str(caught.value)
    assert before == snapshot(store_url)
    assert calls_before == len(openai_mock.calls)


def test_unknown_run_raises_run_not_found(openai_mock: respx.MockRouter, store_url: str) -> None:
    """A run id the store never saw raises RunNotFound, and nothing is written."""
    agent, _ = finished_run(openai_mock, store_url, RunStatus.COMPLETED)
    before = snapshot(store_url)

    with pytest.raises(RunNotFound, match="no run 'never-existed' in session 's'"):
        agent.continue_run("never-existed", "s")

    assert before == snapshot(store_url)


def test_run_of_another_session_raises_run_not_found(
    openai_mock: respx.MockRouter, store_url: str
) -> None:
    """Continuing a real run under the wrong session id is RunNotFound, naming the real
    session; nothing is written."""
    agent, out = finished_run(openai_mock, store_url, RunStatus.COMPLETED)
    before = snapshot(store_url)

    with pytest.raises(RunNotFound, match="belongs to session 's'"):
        agent.continue_run(out.run_id, "other-session")

    assert before == snapshot(store_url)


def test_unknown_run_on_an_empty_store(store_url: str) -> None:
    """On a store that holds nothing yet, continuing raises RunNotFound and creates no
    session or run row (only the schema)."""
    agent = Agent("cont", make_model(), store_url)

    with pytest.raises(RunNotFound):
        agent.continue_run("r", "s")

    counts = Store(store_url).count_rows()
    assert {"kp_meta": 1, "kp_sessions": 0, "kp_runs": 0, "kp_run_messages": 0} == {
        k: counts[k] for k in ("kp_meta", "kp_sessions", "kp_runs", "kp_run_messages")
    }
