# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Model faults at the HTTP layer, through the real openai SDK and the reference runtime."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import openai
import pytest

from killpoint.scenarios import Fault, ScriptedModel
from killpoint.scenarios.builtin import research

from .support import run_scenario

API_KEY = "sk-killpoint-test"

# kind -> (SDK max_retries, what the SDK raises, or None for a reply after a retry)
SDK_OUTCOMES: dict[str, tuple[int, type[Exception] | None]] = {
    "429": (1, None),
    "500": (0, openai.InternalServerError),
    "timeout": (0, openai.APITimeoutError),
    "disconnect": (0, openai.APIConnectionError),
}
# kind -> (SDK max_retries, the run's status): the documented outcome of each fault.
RUN_OUTCOMES: dict[str, tuple[int, str]] = {
    "429": (1, "COMPLETED"),
    "500": (0, "ERROR"),
    "timeout": (0, "ERROR"),
    "disconnect": (0, "ERROR"),
}


@pytest.mark.parametrize("kind", list(SDK_OUTCOMES))
def test_each_fault_through_the_sdk(kind: str, tmp_path: Path) -> None:
    """A 429 is retried after its retry-after-ms and answered; a 500, a timeout and a
    dropped connection raise the SDK's own error class when no retry is left."""
    retries, error = SDK_OUTCOMES[kind]
    model = ScriptedModel(
        research.script,
        tmp_path,
        faults=[Fault(1, kind)],
        record_traffic=True,  # type: ignore[arg-type]
    )
    c = openai.OpenAI(api_key=API_KEY, max_retries=retries)
    with model:
        if error is None:
            reply = c.responses.create(model="m", input="Find it.")
            assert "search" == reply.output[0].name
            assert [429, 200] == [status for _, status, _ in model.traffic]
        else:
            with pytest.raises(error):
                c.responses.create(model="m", input="Find it.")


@pytest.mark.parametrize("kind", list(RUN_OUTCOMES))
def test_each_fault_gives_the_documented_run_status(kind: str, tmp_path: Path) -> None:
    """On the reference runtime, a fault at model turn 2 ends the run as documented, and
    the run's error names the SDK's error class."""
    retries, status = RUN_OUTCOMES[kind]
    sc = dataclasses.replace(
        research.SCENARIO,
        faults=(Fault(turn=2, kind=kind),),  # type: ignore[arg-type]
        max_retries=retries,
    )
    out = run_scenario(sc, tmp_path, "tool-batch")
    names = {
        "500": "InternalServerError",
        "timeout": "APITimeoutError",
        "disconnect": "APIConnectionError",
    }
    expected = (status, names.get(kind))
    actual = (
        out.results[0].status,
        next((n for n in names.values() if n in (out.runs[0].error or "")), None),
    )
    assert expected == actual


def test_a_500_within_the_retries_is_absorbed(tmp_path: Path) -> None:
    """A 500 fired fewer times than max_retries is retried away: the run completes (the
    fault ends a run only when `times` exceeds the retries)."""
    sc = dataclasses.replace(research.SCENARIO, faults=(Fault(2, "500", times=1),), max_retries=1)
    out = run_scenario(sc, tmp_path, "runs")
    assert ("COMPLETED", [200, 500, 200, 200, 200, 200]) == (
        out.results[0].status,
        [s for _, s, _ in out.traffic],
    )


def test_a_fault_is_spent_for_a_fresh_model_on_the_same_state(tmp_path: Path) -> None:
    """The fault count lives in the state dir: a new instance (a new worker) does not
    fire a fault that an earlier instance already fired."""
    c = openai.OpenAI(api_key=API_KEY, max_retries=0)
    with (
        ScriptedModel(research.script, tmp_path, faults=[Fault(1, "500")]),
        pytest.raises(openai.InternalServerError),
    ):
        c.responses.create(model="m", input="Find it.")
    with ScriptedModel(research.script, tmp_path, faults=[Fault(1, "500")]):
        reply = c.responses.create(model="m", input="Find it.")
    assert "search" == reply.output[0].name


def test_an_unknown_fault_kind_is_refused() -> None:
    """A typo in a fault kind fails when the scenario is defined, naming the choices."""
    with pytest.raises(ValueError, match="disconnect"):
        Fault(1, "503")  # type: ignore[arg-type]
