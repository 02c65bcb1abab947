"""The oracle: sessions compared by identity into findings, effects counted, and the one
rule that makes a verdict of findings."""

# ruff: noqa: SIM300
from __future__ import annotations

import copy
from collections import Counter
from typing import Any

from killpoint.judge.oracle import (
    Sides,
    comparable,
    compare_sessions,
    count_effects,
    differences,
    effect_findings,
    first_difference,
)
from killpoint.values.findings import Finding, verdict_of

CHARGE = ("charge_card", '{"cents":500}')
EMAIL = ("send_email", '{"to":"a"}')
SMS = ("send_sms", '{"to":"a"}')


def execution(name: str, arg: str, turn: int, index: int, result: str = "ok") -> dict[str, Any]:
    return {
        "name": name,
        "arguments": f'{{"q": "{arg}"}}',
        "turn": turn,
        "call_index": index,
        "result": result,
    }


def session(*executions: dict[str, Any], status: str = "COMPLETED") -> dict[str, Any]:
    messages = [{"role": "user", "content": "Go.", "tool_calls": []}]
    for e in executions:
        messages.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"name": e["name"], "arguments": e["arguments"]}],
            }
        )
        messages.append({"role": "tool", "content": e["result"], "tool_calls": []})
    run = {
        "status": status,
        "messages": messages,
        "tool_executions": list(executions),
        "last_checkpoint_at_message_index": len(messages),
        "usage": {"input_tokens": 10 * len(executions)},
    }
    return {"state": {}, "runs": {"r1": run}}


SEVEN = session(*(execution("search" if n < 3 else "fetch", str(n), n + 1, 0) for n in range(7)))


def kinds_of(found: list[Finding]) -> list[str]:
    return [f.kind for f in found]


class TestSessions:
    def test_equal_sessions_have_no_finding(self) -> None:
        assert [] == compare_sessions(SEVEN, copy.deepcopy(SEVEN))

    def test_failure_records_are_compared_apart_and_never_set_the_verdict(self) -> None:
        """A model error the runtime kept in its history (a fault the cell injected, then
        continued) beside the same conversation: one `failures-differ` finding that
        leaves the cell ok; the same record with the conversation changed is still a
        divergence, found where it shows."""
        failed = copy.deepcopy(SEVEN)
        failed["runs"]["r1"]["failures"] = [{"kind": "error", "code": "500", "at_message": 3}]
        found = compare_sessions(SEVEN, failed)
        assert ["failures-differ"] == kinds_of(found)
        assert ("ok", True) == verdict_of(found)
        assert "keeps 1 failure record (error) where the baseline keeps none" in found[0].sentence
        assert "runs[0].failures" == found[0].path
        worse = copy.deepcopy(failed)
        worse["runs"]["r1"]["messages"].pop()
        assert "messages-differ" in kinds_of(compare_sessions(SEVEN, worse))
        assert "diverged" == verdict_of(compare_sessions(SEVEN, worse))[0]

    def test_missing_executions_are_named_before_any_field(self) -> None:
        """A resumed run that kept only its last leg: the lost executions are listed by
        name and arguments, not reported as a field that differs at index 0."""
        resumed = copy.deepcopy(SEVEN)
        run = resumed["runs"]["r1"]
        run["tool_executions"] = run["tool_executions"][3:]

        found = compare_sessions(SEVEN, resumed)

        lost = next(f for f in found if f.kind == "tool-executions-lost")
        assert lost.sentence.startswith(
            "3 of the 7 tool executions in the baseline are missing from the resumed run: "
            'search({"q":"0"}), '
        )
        assert "search" == lost.tool
        assert "tool-executions-differ" not in kinds_of(found)

    def test_every_problem_of_a_run_is_a_finding_of_its_own(self) -> None:
        """Status, usage and executions that differ are three findings, not the first."""
        resumed = copy.deepcopy(SEVEN)
        run = resumed["runs"]["r1"]
        run["status"] = "RUNNING"
        run["usage"] = {"input_tokens": 999}
        run["tool_executions"].append(execution("fetch", "x", 8, 0))

        found = compare_sessions(SEVEN, resumed)

        assert {"status-differs", "usage-differs", "tool-executions-extra"} <= set(kinds_of(found))
        assert "diverged" == verdict_of(found)[0]

    def test_the_same_executions_in_another_order_are_reordered(self) -> None:
        resumed = copy.deepcopy(SEVEN)
        run = resumed["runs"]["r1"]
        run["tool_executions"] = list(reversed(run["tool_executions"]))
        assert ["tool-executions-reordered"] == kinds_of(compare_sessions(SEVEN, resumed))

    def test_a_matched_execution_with_another_result_differs_in_that_field(self) -> None:
        resumed = copy.deepcopy(SEVEN)
        resumed["runs"]["r1"]["tool_executions"][2]["result"] = "other"
        (found,) = [
            f for f in compare_sessions(SEVEN, resumed) if f.kind == "tool-executions-differ"
        ]
        assert "runs[0].tool_executions[2].result" == found.path

    def test_sentences_name_the_sides_they_compare(self) -> None:
        resumed = copy.deepcopy(SEVEN)
        resumed["runs"]["r1"]["status"] = "RUNNING"
        sides = Sides("store after the takeover", "store after the stale worker woke")
        (status,) = [
            f for f in compare_sessions(SEVEN, resumed, sides) if f.kind == "status-differs"
        ]
        assert (
            "run 1 ends RUNNING in the store after the stale worker woke, COMPLETED in the store "
            "after the takeover" == status.sentence
        )

    def test_a_missing_run_and_a_missing_session(self) -> None:
        two = copy.deepcopy(SEVEN)
        two["runs"]["r2"] = copy.deepcopy(two["runs"]["r1"])
        assert ["runs-differ"] == kinds_of(compare_sessions(two, SEVEN))
        assert ["runs-differ"] == kinds_of(compare_sessions(SEVEN, None))
        assert [] == compare_sessions(None, None)


class TestDifferences:
    def test_every_leaf_is_listed_with_its_path(self) -> None:
        found = differences({"a": [1, 2, 3], "b": "x"}, {"a": [1, 9], "b": "y"})
        # what is missing before what changed
        assert ["session.a[2]", "session.a[1]", "session.b"] == [d.path for d in found]
        assert first_difference({}, {"extra": 1}) is not None

    def test_one_missing_execution_is_one_difference_not_a_shift(self) -> None:
        """The first tool execution gone: the whole difference says that once (by identity),
        not as every later execution's fields at a shifted index."""
        resumed = copy.deepcopy(SEVEN)
        run = resumed["runs"]["r1"]
        gone = run["tool_executions"].pop(0)
        del run["messages"][1:3]  # its call and result

        found = differences(comparable(SEVEN), comparable(resumed))

        assert [
            ("session.runs[0].messages[1]", SEVEN["runs"]["r1"]["messages"][1], None),
            ("session.runs[0].messages[2]", SEVEN["runs"]["r1"]["messages"][2], None),
            ("session.runs[0].tool_executions[0]", gone, None),
        ] == [(d.path, d.expected, d.actual) for d in found]

    def test_an_extra_execution_then_a_changed_one_in_that_order(self) -> None:
        resumed = copy.deepcopy(SEVEN)
        run = resumed["runs"]["r1"]
        run["tool_executions"][5]["result"] = "other"
        run["tool_executions"].insert(0, execution("search", "again", 1, 1))

        found = differences(SEVEN["runs"]["r1"]["tool_executions"], run["tool_executions"], "x")

        assert [("x[0]", None, "again"), ("x[6].result", "ok", "other")] == [
            (
                d.path,
                d.expected,
                d.actual if d.expected else '"again"' in d.actual["arguments"] and "again",
            )
            for d in found
        ]


class TestEffects:
    def test_effects_repeated_missing_and_foreign_are_told_apart(self) -> None:
        """A repeat of a baseline effect is a duplicate; an effect the baseline never had is
        foreign (the run diverged), not a duplicate; a baseline effect absent is missing."""
        counted = count_effects(Counter({CHARGE: 1, EMAIL: 1}), Counter({CHARGE: 3, SMS: 1}))

        assert 2 == counted.duplicates
        assert [(CHARGE, 2)] == counted.repeated
        assert [(SMS, 1)] == counted.foreign
        assert [(EMAIL, 1)] == counted.missing

    def test_a_repeat_is_allowed_per_call_in_flight_and_beyond_it_duplicated(self) -> None:
        """The charge in flight at the crash may run again once; its third run is a
        duplicate beyond the bound, and both are counted."""
        counted = count_effects(Counter({CHARGE: 1}), Counter({CHARGE: 3}))

        found = effect_findings(counted, Counter({CHARGE: 1}), judged=True)

        assert ["effect-duplicated", "effect-repeated"] == kinds_of(found)
        assert ("duplicated", False) == verdict_of(found)
        assert "charge_card" == found[0].tool

    def test_an_allowance_for_another_call_allows_nothing_here(self) -> None:
        counted = count_effects(Counter({CHARGE: 1}), Counter({CHARGE: 2}))
        found = effect_findings(counted, Counter({EMAIL: 1}), judged=True)
        assert ["effect-duplicated"] == kinds_of(found)

    def test_a_run_not_judged_owes_no_missing_effect(self) -> None:
        """A run lost as expected did not owe the rest of its effects."""
        counted = count_effects(Counter({CHARGE: 1, EMAIL: 1}), Counter({CHARGE: 1}))
        assert [] == effect_findings(counted, Counter(), judged=False)
        assert ["effect-lost"] == kinds_of(effect_findings(counted, Counter(), judged=True))


class TestVerdict:
    def test_the_most_severe_finding_sets_the_verdict(self) -> None:
        """A duplicated charge outranks a metrics difference in the same cell."""
        found = [
            Finding("usage-differs", "metrics doubled"),
            Finding("effect-duplicated", "charged twice"),
        ]
        assert ("duplicated", False) == verdict_of(found)

    def test_expected_findings_and_low_ones_leave_the_cell_expected(self) -> None:
        assert ("ok", True) == verdict_of([])
        assert ("lost", True) == verdict_of([Finding("run-lost", "gone", expected=True)])
        assert ("ok", True) == verdict_of([Finding("inconsistency", "a stale mark")])

    def test_groups_put_numbers_aside(self) -> None:
        a = Finding("tool-executions-lost", "x", path="runs[0].tool_executions", tool="search")
        b = Finding("tool-executions-lost", "y", path="runs[3].tool_executions", tool="search")
        assert a.group_key == b.group_key == "tool-executions-lost:-:runs[*].tool_executions"
        c = Finding("effect-duplicated", "z", path="ledger", tool="charge_card")
        assert "effect-duplicated:charge_card:ledger" == c.group_key


def test_a_messages_own_token_metrics_are_usage_not_content() -> None:
    """agno keeps token metrics on each message: a resumed run that re-asked a turn has
    other counts there, a low usage difference, not a high messages one."""
    resumed = copy.deepcopy(SEVEN)
    base = copy.deepcopy(SEVEN)
    base["runs"]["r1"]["messages"][1]["metrics"] = {"input_tokens": 85}
    resumed["runs"]["r1"]["messages"][1]["metrics"] = {"input_tokens": 241}
    found = compare_sessions(base, resumed)
    assert ["usage-differs"] == kinds_of(found)
    assert "85 in the baseline, 241 in the resumed run" in found[0].sentence
