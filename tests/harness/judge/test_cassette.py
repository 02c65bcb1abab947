# ruff: noqa: SIM300 - tests assert `expected == actual`
"""A cassette's misses judged: the first one of a cell a finding with both histories, placed
before what it explains; any one of a baseline a stale cassette."""

from __future__ import annotations

import json
from pathlib import Path

from killpoint.judge.cassette import history_findings, stale, with_history
from killpoint.scenarios.cassette.history import History
from killpoint.scenarios.cassette.replay import UNRECORDED_LOG
from killpoint.values.findings import Finding
from killpoint.values.sentences import problems

RECORDED = History("Be brief.", ("search",), (("user", "Go."), ("assistant", "Done.")))


def miss(state: Path, asked: History, turn: int) -> None:
    line = {
        "turn": turn,
        "pid": 1,
        "format": "responses",
        "history": asked.to_json(),
        "nearest": {"index": 0, "turn": 1, "history": RECORDED.to_json()},
        "at": asked.departs_at(RECORDED),
    }
    with open(state / UNRECORDED_LOG, "a") as f:
        f.write(json.dumps(line) + "\n")


def test_no_miss_no_finding(tmp_path: Path) -> None:
    assert [] == history_findings(tmp_path)
    assert None is stale(tmp_path)


def test_the_first_miss_with_both_histories(tmp_path: Path) -> None:
    miss(tmp_path, History("Be brief.", ("search",), (("user", "Go."), ("assistant", "Other."))), 2)
    miss(tmp_path, History("Be brief.", ("search",), (("user", "Later."),)), 3)
    (found,) = history_findings(tmp_path)
    assert ("history-unrecorded", "diverged") == (found.kind, found.verdict)
    assert (
        "model turn 2 asked what the recording never saw: the request reads "
        "'assistant: Other.' where the recording has 'assistant: Done.' (line 4 of the "
        "history) (1 more request unrecorded after it)"
    ) == found.sentence
    assert [] == problems(found.sentence)
    assert RECORDED.lines() == found.expected_value
    assert [">> assistant: Done. | assistant: Other."] == [
        e for e in found.evidence if e.startswith(">>")
    ]


def test_a_miss_comes_before_what_it_explains(tmp_path: Path) -> None:
    miss(tmp_path, History("", (), (("user", "x"),)), 1)
    contract = Finding("ended-run-continued", "continued")
    differs = Finding("status-differs", "status")
    kinds = [f.kind for f in with_history([contract, differs], tmp_path)]
    assert ["ended-run-continued", "history-unrecorded", "status-differs"] == kinds


def test_a_baseline_miss_is_a_stale_cassette(tmp_path: Path) -> None:
    first = tmp_path / "first"
    first.mkdir()
    miss(first, History("Be thorough.", ("search",), (("user", "Go."),)), 1)
    text = stale(first)
    assert text is not None and text.startswith(
        "the cassette is stale: the agent's first request no longer matches the recording: "
        "the request reads 'system: Be thorough.' where the recording has 'system: Be brief.'"
    )
    later = tmp_path / "later"
    later.mkdir()
    miss(later, History("Be brief.", ("search",), (("user", "Go."), ("assistant", "Hm."))), 2)
    text = stale(later)
    assert text is not None and "model turn 2 is not in the cassette" in text
    assert [] == problems(text)
