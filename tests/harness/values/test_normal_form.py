"""The normal form: a wrong shape from an adapter gets one error naming the field; the
oracle's exclusions reach every depth."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from killpoint.errors import NormalFormError
from killpoint.values.normal_form import exclude, validate_session

RUN: dict[str, Any] = {
    "status": "COMPLETED",
    "last_checkpoint_at_message_index": 3,
    "messages": [
        {"role": "user", "content": "Go.", "tool_calls": []},
        {"role": "assistant", "tool_calls": [{"name": "search", "arguments": '{"q": "x"}'}]},
        {"role": "tool", "content": "found", "tool_calls": []},
    ],
    "tool_executions": [
        {"name": "search", "arguments": '{"q": "x"}', "turn": 1, "call_index": 0, "id": "e1"}
    ],
    "usage": {"input_tokens": 3},
}
SESSION = {"state": {"count": 1}, "runs": {"r1": RUN}}


def broken(path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    session = copy.deepcopy(SESSION)
    target: Any = session
    for key in path[:-1]:
        target = target[key]
    if value is KeyError:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return session


class TestValidation:
    def test_the_documented_shape_passes_and_none_means_absent(self) -> None:
        validate_session(SESSION)
        validate_session(None)

    @pytest.mark.parametrize(
        ("path", "value", "named"),
        [
            (("runs",), [RUN], "runs should be a dict of run id -> run"),
            (("runs", "r1", "status"), "DONE", "runs['r1'].status should be one of"),
            (("runs", "r1", "messages"), KeyError, "runs['r1'].messages should be present"),
            (("runs", "r1", "messages", 1, "role"), None, "runs['r1'].messages[1].role should"),
            (("runs", "r1", "messages", 0, "tool_calls"), None, "messages[0].tool_calls should"),
            (("runs", "r1", "tool_executions", 0, "arguments"), {"q": "x"}, "[0].arguments"),
            (("runs", "r1", "tool_executions", 0, "turn"), "1", "tool_executions[0].turn should"),
            (("runs", "r1", "last_checkpoint_at_message_index"), "3", "last_checkpoint_at"),
            (("runs", "r1", "failures"), {"kind": "error"}, "runs['r1'].failures should be a list"),
            (("runs", "r1", "failures"), [{"kind": "oops"}], "failures[0].kind should be one of"),
            (("runs", "r1", "failures"), ["500"], "runs['r1'].failures[0] should be a dict"),
        ],
    )
    def test_a_wrong_field_is_named(self, path: tuple[Any, ...], value: Any, named: str) -> None:
        with pytest.raises(NormalFormError) as info:
            validate_session(broken(path, value), "runtime 'mine': read_session")
        assert named in str(info.value)
        assert str(info.value).startswith("killpoint: runtime 'mine': read_session returned")

    def test_failure_records_are_optional_and_of_two_kinds(self) -> None:
        """A run may keep the records of failed or aborted attempts beside its messages."""
        for failures in ([], [{"kind": "error", "code": "500"}, {"kind": "abort"}]):
            session = copy.deepcopy(SESSION)
            session["runs"]["r1"]["failures"] = failures
            validate_session(session)


class TestExclusions:
    def test_excluded_keys_go_at_every_depth_and_nothing_else(self) -> None:
        out = exclude(SESSION, ("id", "usage"))
        assert "id" not in out["runs"]["r1"]["tool_executions"][0]
        assert "usage" not in out["runs"]["r1"]
        assert out["runs"]["r1"]["messages"] == RUN["messages"]
        assert "id" in SESSION["runs"]["r1"]["tool_executions"][0]  # the input is untouched
