# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Model behaviours at the HTTP layer: a turn re-asked by another process after a crash is
answered otherwise, as each behaviour says; every first pass is the script's reply."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import openai
import pytest

from killpoint.scenarios import ScriptedModel
from killpoint.scenarios.behaviours import BEHAVIOURS, UnknownBehaviour, check, respelled
from killpoint.scenarios.builtin import side_effects
from killpoint.scenarios.model import regenerated_turns

API_KEY = "sk-killpoint-test"
CHARGE_OUTPUT = side_effects.charge_text(side_effects.CUSTOMER, side_effects.AMOUNT_CENTS)


def second_turn_input() -> list[dict[str, Any]]:
    """The side-effects conversation after its charge: turn 2 asks for email + SMS."""
    return [
        {"role": "user", "content": "Charge cus_42 for the order and send the receipt."},
        {
            "type": "function_call",
            "call_id": "call_charge",
            "name": "charge_card",
            "arguments": json.dumps({"customer": "cus_42", "amount_cents": 1999}),
        },
        {"type": "function_call_output", "call_id": "call_charge", "output": CHARGE_OUTPUT},
    ]


def ask(state: Path, behaviour: str | None, raw: list[dict[str, Any]]) -> dict[str, Any]:
    model = ScriptedModel(
        side_effects.script, state, behaviour=behaviour, replan=side_effects.REPLAN
    )
    with model:
        client = openai.OpenAI(api_key=API_KEY, max_retries=0)
        response = client.responses.create(model="m", input=raw)  # type: ignore[arg-type]
    return json.loads(response.model_dump_json())


def _child(state: str, behaviour: str | None, conn: Any) -> None:
    conn.send(ask(Path(state), behaviour, second_turn_input()))
    conn.close()


def first_pass_elsewhere(state: Path, behaviour: str | None) -> dict[str, Any]:
    """The turn asked by another process (the worker that then crashed)."""
    context = multiprocessing.get_context("fork")
    ours, theirs = context.Pipe(duplex=False)
    child = context.Process(target=_child, args=(str(state), behaviour, theirs))
    child.start()
    reply = ours.recv()
    child.join()
    assert 0 == child.exitcode
    return reply


def calls(response: dict[str, Any]) -> list[tuple[str, str, str]]:
    return [
        (i["call_id"], i["name"], i["arguments"])
        for i in response["output"]
        if i["type"] == "function_call"
    ]


@pytest.fixture
def plain(tmp_path: Path) -> dict[str, Any]:
    """The turn as the script answers it, asked once, by one process, without behaviour."""
    return ask(tmp_path / "plain", None, second_turn_input())


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_the_first_pass_is_the_scripts_reply(
    tmp_path: Path, plain: dict[str, Any], behaviour: str
) -> None:
    """With a behaviour set, a turn asked for the first time gets the very reply a model
    without one gives (the baseline stays the baseline), and nothing is logged as
    regenerated."""
    first = first_pass_elsewhere(tmp_path / "m", behaviour)
    assert (plain["id"], calls(plain)) == (first["id"], calls(first))
    assert [] == regenerated_turns(tmp_path / "m")


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_the_same_process_asking_again_gets_the_same_reply(
    tmp_path: Path, plain: dict[str, Any], behaviour: str
) -> None:
    """A second request from the process that was answered (an SDK retry) is no crash:
    the reply is the same."""
    ask(tmp_path / "m", behaviour, second_turn_input())
    again = ask(tmp_path / "m", behaviour, second_turn_input())
    assert (plain["id"], calls(plain)) == (again["id"], calls(again))


def reasked(tmp_path: Path, behaviour: str) -> tuple[dict[str, Any], dict[str, Any]]:
    first = first_pass_elsewhere(tmp_path / "m", behaviour)
    return first, ask(tmp_path / "m", behaviour, second_turn_input())


def test_regenerate_ids_gives_the_same_calls_fresh_ids(tmp_path: Path) -> None:
    first, again = reasked(tmp_path, "regenerate-ids")
    assert [c[1:] for c in calls(first)] == [c[1:] for c in calls(again)]
    assert not {c[0] for c in calls(first)} & {c[0] for c in calls(again)}
    assert first["id"] != again["id"]
    (logged,) = regenerated_turns(tmp_path / "m")
    assert "regenerate-ids" == logged["behaviour"]
    assert [c[0] for c in calls(first)] == [c["first_call_id"] for c in logged["calls"]]
    assert [c[0] for c in calls(again)] == [c["call_id"] for c in logged["calls"]]


def test_a_regenerated_response_can_be_chained_to(tmp_path: Path) -> None:
    """The fresh response id is stored like any other: a runtime chaining its next
    request to it by previous_response_id is answered."""
    _, again = reasked(tmp_path, "regenerate-ids")
    outputs = [
        {"type": "function_call_output", "call_id": c[0], "output": "sent"} for c in calls(again)
    ]
    with ScriptedModel(side_effects.script, tmp_path / "m"):
        client = openai.OpenAI(api_key=API_KEY, max_retries=0)
        chained = client.responses.create(
            model="m",
            input=outputs,  # type: ignore[arg-type]
            previous_response_id=again["id"],
        )
    assert chained.output[0].type == "message"


def test_reorder_gives_the_same_calls_in_another_order(tmp_path: Path) -> None:
    first, again = reasked(tmp_path, "reorder")
    assert calls(first) != calls(again)
    assert sorted(calls(first)) == sorted(calls(again))  # ids travel with their calls
    assert [c["first_position"] for c in regenerated_turns(tmp_path / "m")[0]["calls"]] == [1, 0]


def test_respell_gives_other_text_for_equal_arguments(tmp_path: Path) -> None:
    first, again = reasked(tmp_path, "respell")
    assert [c[:2] for c in calls(first)] == [c[:2] for c in calls(again)]
    for (_, _, before), (_, _, after) in zip(calls(first), calls(again), strict=True):
        assert before != after
        assert json.loads(before) == json.loads(after)


def test_respelling_moves_keys_spaces_and_numbers() -> None:
    import random

    text = respelled({"customer": "cus_42", "amount_cents": 1999}, random.Random(0))
    assert text.index("amount_cents") < text.index("customer")
    assert "1999.0" in text and " " in text.replace(", ", "")
    assert {"customer": "cus_42", "amount_cents": 1999} == json.loads(text)


def test_replan_sends_the_declared_alternative(tmp_path: Path) -> None:
    first, again = reasked(tmp_path, "replan")
    bodies = [json.loads(c[2])["body"] for c in calls(again)]
    assert [f"Your receipt: {json.loads(c[2])['body']}" for c in calls(first)] == bodies
    assert [json.loads(c[2])["to"] for c in calls(first)] == [
        json.loads(c[2])["to"] for c in calls(again)
    ]


def test_a_behaviour_replays_exactly(tmp_path: Path) -> None:
    """Two cells with the same history get the same regenerated reply."""
    one = reasked(tmp_path / "a", "regenerate-ids")[1]
    two = reasked(tmp_path / "b", "regenerate-ids")[1]
    assert (one["id"], calls(one)) == (two["id"], calls(two))


def test_an_unknown_behaviour_names_the_choices() -> None:
    with pytest.raises(UnknownBehaviour, match="regenerate-ids, reorder, respell, replan"):
        check("regenerate")
