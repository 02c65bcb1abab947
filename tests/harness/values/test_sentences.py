"""Every finding kind's sentence, from its one template, reads: rendered from the facts of
a real finding of a real cell (recorded from the agno and LangGraph campaigns into
data/real_findings.json), and again with every count made 0, 1 and 2."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from killpoint.values.findings import KINDS
from killpoint.values.sentences import TEMPLATES, count, numbers, problems, say

REAL: dict[str, dict[str, Any]] = json.loads(
    (Path(__file__).parent / "data" / "real_findings.json").read_text(encoding="utf-8")
)
# Kinds no cell of the recorded campaigns showed (the runtimes do not break these
# promises), with facts as their finding sites make them. Recording a real one removes it.
UNSEEN: dict[str, dict[str, Any]] = {
    "checkpoint-count": {"point": "after-checkpoint:2", "held": 1, "wanted": 2},
    "status-regressed": {"run_id": "r1", "status": "COMPLETED", "when": "at the end", "now": "RUNNING"},
    "terminal-early": {"run": 1, "run_id": "r1", "status": "COMPLETED", "point": "after-checkpoint:2", "held": 2, "turns": [3, 4, 5], "ended_at": 5},
    "confirmation-dropped": {"run_id": "r1", "tool": "refund", "turn": 2, "how": "without applying"},
    "idempotency-key-changed": {"call": 'charge({"cents":5})', "effects": 2, "keys": 2},
    "effect-reissued": {"call": 'charge({"order_id":"ord_1"})', "n": 2, "behaviour": "regenerate-ids", "before": "call_A", "after": "call_B"},
    "effect-lost": {"call": 'send_email({"to":"a"})', "fewer": 1},
    "effect-foreign": {"call": 'send_sms({"to":"a"})', "n": 1},
    "tool-executions-reordered": {"n": 7, "expected_side": "baseline", "actual_side": "resumed run"},
    "usage-overcounted": {"stored": 7, "served": 5},
    "usage-undercounted": {"run_id": "r1", "stored": 2, "consumed": 4, "drives": 2},
    "effect-before-record": {"call": 'search({"q":"a"})', "turn": 1, "reply": 2, "effect": 3, "committed": 6},
    "acknowledged-early": {"run_id": "r1", "status": "COMPLETED", "ack": 9, "committed": 10},
    "acknowledged-unsynced": {"run_id": "r1", "status": "COMPLETED", "ack": 9, "committed": 7, "write": 6, "file": "store.db-wal"},
    "durability-weaker": {"setting": "synchronous", "value": "OFF", "why": "SQLite never syncs a commit"},
    "store-not-durable": {"setting": "fsync", "value": "off", "why": "the server never flushes to disk"},
    "lease-stamped-expired": {"run_id": "r1", "by": "checkpoint", "ago": 12.5},
    "turn-reanswered": {"turns": [2], "differences": 4},
    "takeover-refused": {"k": 3, "woken": 5, "detail": "StaleSessionError: the session has been modified in storage"},
    "cassette-stale": {"turn": 1, "line": 1, "asked": "system: Be thorough.", "recorded": "system: Be brief.", "first": True},
    "failures-differ": {"run": 1, "expected_kinds": ["abort"], "actual_kinds": ["abort"], "where": "failures[0].at_message", "expected_value": 3, "actual_value": 4, "expected_side": "baseline", "actual_side": "resumed run"},
}  # fmt: skip


def facts_of(kind: str) -> dict[str, Any]:
    if kind in REAL:
        return dict(REAL[kind]["facts"])
    if kind in UNSEEN:
        return dict(UNSEEN[kind])
    # A kind on the generic template says its caller's detail: its meaning stands in.
    assert kind not in TEMPLATES, f"{kind}: record a real finding of it, or add it to UNSEEN"
    return {"detail": KINDS[kind].meaning}


def variants(facts: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The facts as they are, then with every count 0, 1 and 2 and every list of numbers
    one long and three long (ranges of one, and of several)."""
    yield facts
    for n in (0, 1, 2):
        changed = dict(facts)
        for k, v in facts.items():
            if isinstance(v, int) and not isinstance(v, bool):
                changed[k] = n
            elif isinstance(v, list) and v and all(isinstance(x, int) for x in v):
                changed[k] = [v[0] + x for x in range(max(1, n + 1))]
            elif isinstance(v, list) and v and all(isinstance(x, str) for x in v):
                changed[k] = v[: max(1, n)]
        yield changed


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_reads_from_its_template(kind: str) -> None:
    for facts in variants(facts_of(kind)):
        sentence = say(kind, facts)
        assert problems(sentence) == [], (kind, sentence)
        # Sides are named for what they are: a comparison that is not with the baseline
        # never says baseline.
        sides = [facts.get("expected_side"), facts.get("actual_side")]
        if any(sides) and "baseline" not in " ".join(str(s) for s in sides):
            assert "baseline" not in sentence, (kind, sentence)


@pytest.mark.parametrize("kind", sorted(REAL))
def test_a_recorded_finding_is_rendered_as_it_was_written(kind: str) -> None:
    """The recorded sentence is the template's (the campaign wrote what the template says)."""
    real = REAL[kind]
    if kind in TEMPLATES:
        assert say(kind, real["facts"]) == real["sentence"], real["cell"]
    assert problems(real["sentence"]) == [], (real["cell"], real["sentence"])


def test_no_kind_is_both_recorded_and_unseen() -> None:
    assert set(REAL) & set(UNSEEN) == set()
    assert set(UNSEEN) <= set(KINDS)


def test_counts_ranges_and_the_check_itself() -> None:
    assert (count(1, "cell"), count(3, "cell"), count(1, "reply"), count(2, "reply")) == (
        "1 cell", "3 cells", "1 reply", "2 replies"
    )  # fmt: skip
    assert numbers("call", [0]) == "call 0"
    assert numbers("call", [0, 1, 2]) == "calls 0..2"
    assert numbers("turn", [2, 5]) == "turns 2, 5"
    for bad in (
        "1 cells",
        "calls 0..0 finished",
        "ran 2 time(s)",
        "1 tool execution(s) store after the stale worker woke that the store after the "
        "store after the takeover does not hold",
    ):
        assert problems(bad), bad
    assert problems("1 of the 7 tool executions in the baseline is missing") == []


@pytest.mark.parametrize(
    "facts",
    [
        {"what": "runs", "runs": 1, "scenario": "multi-run", "expected_runs": 3},
        {"what": "status", "run": 1, "status": "ERROR", "expected_status": "COMPLETED"},
        {"what": "content", "run": 2, "answer": None, "expected_answer": "Porto has 231,800"},
    ],
)
def test_each_unmet_outcome_reads(facts: dict[str, Any]) -> None:
    """The recorded outcome is of the calls; the run count, status and answer read too."""
    for changed in variants(facts):
        sentence = say("outcome-unexpected", changed)
        assert problems(sentence) == [] and "scenario" in sentence, sentence


def test_a_status_the_stale_worker_returned_says_so() -> None:
    """A status lost after a takeover was returned by the stale worker, not by the run's
    driver: the sentence names it; a driver's own says only the run."""
    facts = {"run_id": "r1", "status": "COMPLETED", "stored": None}
    assert say("acknowledged-lost", facts) == "run r1 returned COMPLETED but is not in the store"
    assert say("acknowledged-lost", {**facts, "who": "the stale worker"}) == (
        "the stale worker returned COMPLETED for run r1 but the run is not in the store"
    )
    assert say("acknowledged-lost", {**facts, "stored": "RUNNING", "who": "the stale worker"}) == (
        "the stale worker returned COMPLETED for run r1 but the store says RUNNING"
    )


def test_a_stale_write_names_its_field_once() -> None:
    """Recorded from agno/research/tool-batch/sqlite/sigstop-writing:2: the comparison's
    own sentence opens with a deeper path of the field; it is said once, the deeper one."""
    facts = {
        "field": "state.session_metrics",
        "inner": "state.session_metrics.input_tokens: 14 in the store after the takeover, "
        "1470 in the store after the stale worker woke (and 5 more differences)",
    }
    assert say("stale-write", facts) == (
        "the stale worker wrote after the takeover, at state.session_metrics.input_tokens: 14 "
        "in the store after the takeover, 1470 in the store after the stale worker woke (and "
        "5 more differences)"
    )


def test_a_stale_cassette_shows_the_lines_where_they_differ() -> None:
    """Two history lines that share a long start (a tool's arguments, say) are shown from
    a little before the first character that differs, not both cut before it."""
    start = 'output call-1: {"query": "Research crash consistency of agent runtimes.", "'
    facts = {
        "turn": 2,
        "line": 3,
        "asked": start + 'region": "eu"}',
        "recorded": start + 'region": "us"}',
    }
    sentence = say("cassette-stale", facts)
    assert '"eu"}' in sentence and '"us"}' in sentence, sentence
    assert problems(sentence) == [], sentence
    short = {**facts, "asked": "user: hello", "recorded": "user: help"}
    assert "'user: hello'" in say("cassette-stale", short)  # a short line whole


def test_a_terminal_status_stored_early_says_which_where_and_what_came_after() -> None:
    """The status, the run, the point and what the store held there; then the evidence that
    the run was not over: the turns the uninterrupted run still asked, and where it ended."""
    facts = dict(UNSEEN["terminal-early"])
    assert say("terminal-early", facts) == (
        "run 1 was already COMPLETED in the store at after-checkpoint:2, with 2 checkpoints "
        "landed; the uninterrupted run was not over there: it went on to ask for model turns "
        "3..5 and ended at checkpoint 5"
    )
    one = {**facts, "status": "CANCELLED", "point": "mid-model:5", "held": 1, "turns": [5]}
    assert "CANCELLED in the store at mid-model:5, with 1 checkpoint landed" in say(
        "terminal-early", one
    )
    assert "ask for model turn 5 and" in say("terminal-early", one)
