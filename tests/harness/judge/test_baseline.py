"""What a baseline's traces say: where a run is in flight (by the trace's order, or by the
store's count in a mode whose writes lag), and which points two baseline traces both
offer (only those are planned; the row's note names the others)."""

# ruff: noqa: SIM300
from __future__ import annotations

import io
from pathlib import Path

from killpoint import kinds
from killpoint.cli.output import console, summary
from killpoint.engine.campaign import Campaign, CampaignConfig, CampaignResult
from killpoint.engine.engine import trace_note
from killpoint.judge.baseline import Baseline
from killpoint.report.document import to_document
from killpoint.values.points import CrashPoint


def written(n: int, *, committing: bool = True) -> list[str]:
    phases = ("writing", "committing", "landed") if committing else ("writing", "landed")
    return [f"checkpoint:{n}:{phase}" for phase in phases]


# Two runs. Run 1 writes checkpoints 1..3, the last two after its last model turn; run 2
# writes 4 and 5. In this run of the scenario checkpoint 1 lands before model turn 2.
FIRST = [
    "run:1:start",
    "model:1:received",
    *written(1),
    "model:2:received",
    *written(2),
    *written(3),
    "run:2:start",
    "model:3:received",
    *written(4),
    *written(5),
]
# Another run of the same scenario, writes lagging further: checkpoint 1 lands after model
# turn 2, and checkpoint 2's commit is not marked (two writes were open at once).
SECOND = [
    "run:1:start",
    "model:1:received",
    "model:2:received",
    *written(1),
    *written(2, committing=False),
    *written(3),
    "run:2:start",
    "model:3:received",
    *written(4),
    *written(5),
]


def baseline(trace: list[str], *, lag: bool, other: list[str] | None = None) -> Baseline:
    base = Baseline(
        "reference",
        "multi-run",
        "async" if lag else "sync",
        "sqlite",
        trace=trace,
        writes_lag=lag,
        other_trace=other or [],
    )
    base.analyse()
    return base


def offered(base: Baseline, kind: str) -> list[int]:
    return [p.k for p in kinds.points_of(base, (kind,))]


class TestInFlight:
    def test_runs_return_at_the_counts_where_the_next_run_starts_and_at_the_end(self) -> None:
        assert {3, 5} == baseline(FIRST, lag=True).returned_at()

    def test_by_the_traces_order_a_write_after_the_last_model_turn_is_between_runs(
        self,
    ) -> None:
        """A mode whose writes keep pace: checkpoints 2, 3 and 4 land after their run's last
        model turn, so nothing is left to take over there."""
        base = baseline(FIRST, lag=False)
        assert [1] == offered(base, "sigstop") == offered(base, "double-resume")

    def test_in_a_mode_whose_writes_lag_every_count_before_a_return_is_in_flight(self) -> None:
        """A run has not returned while its last writes land behind it (2 and 3 of run 1,
        4 of run 2): the takeover points are offered by the store's count, and the same
        from both traces."""
        first, second = baseline(FIRST, lag=True), baseline(SECOND, lag=True)
        assert [1, 2, 4] == offered(first, "sigstop") == offered(second, "sigstop")
        assert [1, 2, 4] == offered(first, "double-resume")


class TestTwoTraces:
    def test_only_points_both_traces_offer_are_planned(self) -> None:
        base = baseline(FIRST, lag=True, other=SECOND)
        alone = baseline(FIRST, lag=True)
        assert CrashPoint("mid-commit", 2) in kinds.points_of(alone, kinds.names())
        planned = kinds.points_of(base, kinds.names())
        assert CrashPoint("mid-commit", 2) not in planned
        assert [CrashPoint("mid-commit", 2)] == kinds.one_trace_only(base, ("mid-commit",))
        only = set(kinds.one_trace_only(base))
        assert CrashPoint("mid-commit", 2) in only
        assert set(kinds.points_of(alone, kinds.names())) - only == set(planned)

    def test_the_difference_is_a_note_on_the_row(self) -> None:
        base = baseline(FIRST, lag=True, other=SECOND)
        # Every kind that needs checkpoint 2's commit marked differs (mid-commit and any
        # other registered kind at the commit).
        only = kinds.one_trace_only(base)
        shown = ", ".join(str(p) for p in only)
        assert (
            f"async: baseline traces differ: {len(only)} point{'s' if len(only) != 1 else ''} "
            "offered by one trace only "
            f"({shown}); not planned"
        ) == trace_note(base)
        assert "mid-commit:2" in shown
        assert None is trace_note(baseline(FIRST, lag=True, other=FIRST))
        assert None is trace_note(baseline(FIRST, lag=True))

    def test_the_campaign_plans_the_common_points_and_the_json_keeps_the_note(
        self, tmp_path: Path
    ) -> None:
        config = CampaignConfig(runtime="reference", work_root=tmp_path)
        base = baseline(FIRST, lag=True, other=SECOND)
        base.trace_note = trace_note(base)
        cells = Campaign(config).cells_for(base)
        schedules = {str(c.schedule) for c in cells}
        assert "mid-commit:1" in schedules and "mid-commit:2" not in schedules
        document = to_document(CampaignResult(config, seed=1, baselines=[base]), ["killpoint"])
        [row] = document["baselines"]
        assert (True, base.trace_note) == (row["writes_lag"], row["trace_note"])
        out = io.StringIO()
        summary(document, console(out))
        assert f"note multi-run/{base.trace_note}" in out.getvalue()


def test_calls_are_counted_per_effect_by_the_intent_their_started_record_declares() -> None:
    """A tool that declares its intent (send_email by `to`) records it on `started` only;
    the `finished` record that follows must not map the call back to its arguments (a
    woken worker's late call of its unfinished batch was then never allowed)."""
    from collections import Counter

    from killpoint.judge.baseline import as_effects
    from killpoint.scenarios.ledger import Entry

    args = '{"body":"hi","to":"ana"}'
    entries = [
        Entry("s", "send_email", args, None, "started", True, 1, 0.0, intent='{"to":"ana"}'),
        Entry("s", "send_email", args, None, "finished", True, 1, 0.1),
    ]
    assert Counter({("send_email", '{"to":"ana"}'): 1}) == as_effects(
        Counter({("send_email", args): 1}), entries
    )
