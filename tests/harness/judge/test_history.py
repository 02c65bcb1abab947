# ruff: noqa: SIM300 - tests assert `expected == actual`
"""The history's rules: on histories written out event by event (each rule, its witness),
then against runtimes that break one rule each in every run (real workers, real kills,
real SQLite): only that rule names the break, in the row, and the reference runtime
passes the same cell with nothing in its row."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from killpoint.judge import history as rules
from killpoint.judge.durability import settings_findings, shortfalls
from killpoint.scenarios.history import Event
from tests.harness.broken_runtimes import HISTORY_VARIANTS, SYNC_VARIANTS
from tests.harness.judge.test_contract import run_with_row, unexpected_kinds


def history(*events: tuple[str, dict[str, Any]] | tuple[str, dict[str, Any], int]) -> list[Event]:
    """Events in order; pid 1 unless a third item gives it."""
    return [
        Event(n, name, pid=(rest[0] if rest else 1), at=100.0 + n, data={"event": name, **data})
        for n, (name, data, *rest) in enumerate(events)
    ]


CALL = ["charge", '{"amount":5}']


class TestEffectBeforeRecord:
    def test_an_effect_after_its_replys_record_passes(self) -> None:
        events = history(
            ("model-reply", {"turn": 1, "calls": [CALL]}),
            ("committed", {"what": "reply", "calls": [CALL]}),
            ("effect", {"tool": "charge", "arguments": '{"amount":5}', "effect": True}),
        )
        assert [] == rules.effects_before_records(events)

    def test_an_effect_before_its_replys_record_is_found_with_its_witness(self) -> None:
        """The reply, the effect, and the record that came too late: three events."""
        events = history(
            ("model-reply", {"turn": 2, "calls": [CALL]}),
            ("effect", {"tool": "charge", "arguments": '{"amount":5}', "effect": True}),
            ("committed", {"what": "checkpoint", "number": 1, "calls": [CALL]}),
        )
        (found,) = rules.effects_before_records(events)
        assert "effect-before-record" == found.kind
        assert 3 == len(found.evidence)
        assert "began (#1) before the reply of model turn 2" in found.sentence
        assert "committed only after, at #2" in found.sentence

    def test_a_record_in_another_worker_or_of_another_call_is_no_record(self) -> None:
        events = history(
            ("model-reply", {"turn": 1, "calls": [CALL]}),
            ("committed", {"what": "reply", "calls": [CALL]}, 2),
            ("committed", {"what": "reply", "calls": [["refund", "{}"]]}),
            ("effect", {"tool": "charge", "arguments": '{"amount":5}', "effect": True}),
        )
        (found,) = rules.effects_before_records(events)
        assert "no record of it was committed" in found.sentence

    def test_a_reply_taken_from_the_store_needs_no_record_here(self) -> None:
        """A resumed worker replays a journaled reply: the model served it nothing."""
        events = history(
            ("model-reply", {"turn": 1, "calls": [CALL]}, 9),
            ("effect", {"tool": "charge", "arguments": '{"amount":5}', "effect": True}),
        )
        assert [] == rules.effects_before_records(events)

    def test_commits_that_never_say_what_they_hold_are_no_evidence(self) -> None:
        """An adapter that reports its commits but not the calls they hold (agno's): no
        commit can be shown to hold the reply, nor not to, so the rule says nothing; the
        same history with one commit that says what it holds is judged."""
        run: list[tuple[str, dict[str, Any]]] = [
            ("model-reply", {"turn": 1, "calls": [CALL]}),
            ("effect", {"tool": "charge", "arguments": '{"amount":5}', "effect": True}),
            ("committed", {"what": "checkpoint", "number": 1}),
        ]
        assert [] == rules.effects_before_records(history(*run))
        told = history(*run, ("committed", {"what": "checkpoint", "number": 2, "calls": []}))
        (found,) = rules.effects_before_records(told)
        assert "no record of it was committed" in found.sentence


class TestAcknowledgements:
    def test_a_status_returned_before_its_commit_landed_is_early(self) -> None:
        events = history(
            ("ack", {"run_id": "r", "status": "COMPLETED"}),
            ("committed", {"what": "checkpoint", "run_id": "r", "status": "COMPLETED"}),
        )
        (found,) = rules.acknowledgements(events)
        assert ("acknowledged-early", 2) == (found.kind, len(found.evidence))

    def test_another_workers_commit_holds_what_a_second_caller_returns(self) -> None:
        events = history(
            ("committed", {"what": "checkpoint", "run_id": "r", "status": "COMPLETED"}, 2),
            ("ack", {"run_id": "r", "status": "COMPLETED"}),
        )
        assert [] == rules.acknowledgements(events)

    def test_a_commit_written_and_synced_before_the_return_passes(self) -> None:
        events = history(
            ("write", {"what": "checkpoint", "number": 3}),
            ("fs", {"op": "write", "file": "store.db-wal"}, 7),
            ("fs", {"op": "write", "file": "store.db-shm"}, 7),
            ("fs", {"op": "fsync", "file": "store.db-wal"}, 7),
            ("committed", {"what": "checkpoint", "number": 3, "run_id": "r", "status": "PAUSED"}),
            ("ack", {"run_id": "r", "status": "PAUSED"}),
        )
        assert [] == rules.acknowledgements(events)

    def test_a_commit_not_synced_before_the_return_is_found(self) -> None:
        """Witness: the commit, its last unsynced write, the return."""
        events = history(
            ("write", {"what": "checkpoint", "number": 3}),
            ("fs", {"op": "write", "file": "store.db-wal"}, 7),
            ("committed", {"what": "checkpoint", "number": 3, "run_id": "r", "status": "PAUSED"}),
            ("ack", {"run_id": "r", "status": "PAUSED"}),
            ("fs", {"op": "fsync", "file": "store.db-wal"}, 7),
        )
        (found,) = rules.acknowledgements(events)
        assert "acknowledged-unsynced" == found.kind
        assert "store.db-wal was written at #1 and not synced" in found.sentence
        assert 3 == len(found.evidence)

    def test_without_the_store_file_trace_only_the_commit_is_held(self) -> None:
        events = history(
            ("committed", {"what": "checkpoint", "number": 3, "run_id": "r", "status": "PAUSED"}),
            ("ack", {"run_id": "r", "status": "PAUSED"}),
        )
        assert [] == rules.acknowledgements(events)


class TestLeases:
    def test_a_lease_that_runs_out_after_its_stamping_passes(self) -> None:
        events = history(("lease", {"run_id": "r", "expires_at": 130.0, "since": 99.0}))
        assert [] == rules.leases(events)

    def test_a_lease_stamped_already_expired_is_found_and_named_once(self) -> None:
        events = history(
            ("lease", {"run_id": "r", "expires_at": 5.0, "since": 99.0, "by": "checkpoint"}),
            ("lease", {"run_id": "r", "expires_at": 6.0, "since": 100.0, "by": "checkpoint"}),
        )
        (found,) = rules.leases(events)
        assert ("lease-stamped-expired", False) == (found.kind, found.expected)
        assert "ran out 1 min 34 s before it was stamped" in found.sentence

    def test_a_worker_whose_clock_was_set_off_is_the_faults_doing(self) -> None:
        events = history(
            ("clock", {"skew": -60.0}),
            ("lease", {"run_id": "r", "expires_at": 70.0, "since": 99.0, "by": "claim"}),
        )
        (found,) = rules.leases(events)
        assert found.expected
        assert 2 == len(found.evidence)


def usage_session(model_calls: int, assistant: int) -> dict[str, Any]:
    run = {
        "usage": {"model_calls": model_calls},
        "messages": [{"role": "assistant"}] * assistant,
    }
    return {"state": None, "runs": {"r": run}}


class TestUsage:
    REPLIES = (
        ("run", {"run_id": "r", "how": "start"}),
        ("model-reply", {"turn": 1}),
        ("ack", {"run_id": "r", "status": "ERROR"}),
        ("run", {"run_id": "r", "how": "continue"}),
        ("model-reply", {"turn": 2}),
        ("model-reply", {"turn": 3}),
    )

    def test_an_uninterrupted_run_counts_every_reply_across_its_continues(self) -> None:
        events = history(*self.REPLIES)
        assert [] == rules.usage(events, usage_session(3, 3), uninterrupted=True)
        (found,) = rules.usage(events, usage_session(2, 3), uninterrupted=True)
        assert ("usage-undercounted", 3, 2) == (
            found.kind,
            found.expected_value,
            found.actual_value,
        )
        assert "served it 3 replies across its start and 1 continue" in found.sentence
        assert 3 == len(found.evidence)

    def test_after_a_crash_a_run_counts_at_least_the_replies_it_holds(self) -> None:
        """A reply lost with the worker is asked again: what was served is no measure."""
        events = history(*self.REPLIES)
        assert [] == rules.usage(events, usage_session(2, 2), uninterrupted=False)
        (found,) = rules.usage(events, usage_session(1, 2), uninterrupted=False)
        assert "counts 1 model call but holds 2 replies" in found.sentence

    def test_a_runtime_that_keeps_no_count_is_not_judged(self) -> None:
        session = {"state": None, "runs": {"r": {"usage": {"input_tokens": 3}, "messages": []}}}
        assert [] == rules.usage(history(*self.REPLIES), session, uninterrupted=True)


class TestReanswered:
    def test_a_turn_whose_first_answer_was_never_durable_may_be_answered_otherwise(
        self,
    ) -> None:
        events = history(
            ("model-reply", {"turn": 2, "calls": [CALL]}, 1),
            ("model-reply", {"turn": 2, "calls": [CALL], "regenerated": True}, 2),
        )
        ((first, again),) = rules.reanswered(events)
        assert (0, 1) == (first.n, again.n)

    def test_a_turn_whose_first_answer_was_durable_is_no_excuse(self) -> None:
        """Its record committed in the first worker: a resume should have taken it."""
        events = history(
            ("model-reply", {"turn": 2, "calls": [CALL]}, 1),
            ("committed", {"what": "reply", "calls": [CALL]}, 1),
            ("model-reply", {"turn": 2, "calls": [CALL], "regenerated": True}, 2),
        )
        assert [] == rules.reanswered(events)

    def test_a_turn_answered_the_same_again_is_no_reanswer(self) -> None:
        events = history(
            ("model-reply", {"turn": 2, "calls": [CALL]}, 1),
            ("model-reply", {"turn": 2, "calls": [CALL]}, 2),
        )
        assert [] == rules.reanswered(events)


class TestSettings:
    @pytest.mark.parametrize(
        ("settings", "weak"),
        [
            ({"synchronous": "FULL", "journal_mode": "wal"}, []),
            ({"synchronous": "NORMAL", "journal_mode": "delete"}, []),
            ({"synchronous": "NORMAL", "journal_mode": "wal"}, ["synchronous"]),
            ({"synchronous": "OFF", "journal_mode": "wal"}, ["synchronous"]),
            ({"synchronous": "FULL", "journal_mode": "memory"}, ["journal_mode"]),
            ({"synchronous_commit": "on", "fsync": "on"}, []),
            ({"synchronous_commit": "off", "fsync": "on"}, ["synchronous_commit"]),
        ],
    )
    def test_what_falls_short_of_a_durable_commit(
        self, settings: dict[str, str], weak: list[str]
    ) -> None:
        assert weak == [s[0] for s in shortfalls(settings)]

    def test_the_runtimes_setting_fails_the_row_and_the_servers_is_shown(self) -> None:
        """A session that turns synchronous_commit off is the runtime's doing; a server
        configured with fsync off is the store's, said and not failing."""
        events = history(
            (
                "settings",
                {
                    "synchronous_commit": "off",
                    "synchronous_commit_source": "session",
                    "fsync": "off",
                    "fsync_source": "server",
                },
            )
        )
        found = {f.kind: f for f in settings_findings(events)}
        assert {"durability-weaker", "store-not-durable"} == set(found)
        assert "synchronous_commit" in found["durability-weaker"].sentence
        assert "ok" == found["store-not-durable"].verdict


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variant", "kind", "where"), HISTORY_VARIANTS, ids=[v[0] for v in HISTORY_VARIANTS]
)
def test_only_its_rule_names_each_broken_runtime(
    tmp_path: Path, variant: str, kind: str, where: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The broken variant's row shows its rule's finding alone, the cell adds nothing
    (no kill lands where the break shows); the reference runtime passes the same cell and
    its row shows nothing. Without the store-file trace: with it, a store that never syncs
    also returns statuses before their commits are synced, and says so twice."""
    monkeypatch.setenv("KILLPOINT_NO_FUSE", "1")
    held_to_its_rule(tmp_path, variant, kind, where)


def held_to_its_rule(tmp_path: Path, variant: str, kind: str, where: str) -> None:
    broken, row = run_with_row(tmp_path, f"tests.harness.broken_runtimes:{variant}", where)
    assert {kind} == unexpected_kinds(broken) | row, [f["sentence"] for f in broken.findings]
    assert kind not in unexpected_kinds(broken), "a cell repeats what its row shows"
    sound, sound_row = run_with_row(tmp_path, "reference", where)
    assert set() == sound_row
    assert (True, set()) == (sound.expected, unexpected_kinds(sound)), sound.detail


@pytest.mark.slow
@pytest.mark.parametrize(
    ("variant", "kind", "where"), SYNC_VARIANTS, ids=[v[0] for v in SYNC_VARIANTS]
)
def test_a_return_before_its_commit_is_synced_shows_in_the_store_file_trace(
    tmp_path: Path, variant: str, kind: str, where: str
) -> None:
    """With the baseline's store on the power-loss filesystem (where FUSE mounts), the
    history holds the store files' writes and syncs: a terminal commit made unsynced is
    named in the row alone, and its settings read back say nothing (FULL)."""
    from tests.harness.powerloss.conftest import need_fuse

    need_fuse("the store-file trace")
    held_to_its_rule(tmp_path, variant, kind, where)
