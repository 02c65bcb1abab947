# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Ownership while the owner is alive, and the classes the matrix used to see only by
chance: each kind catches its broken variant of the reference runtime at every run, the
reference runtime passes, and a runtime whose second caller waits for the owner passes
(real workers, real SQLite)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from killpoint import kinds
from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig
from killpoint.kinds.ownership import at_once
from killpoint.scenarios.ledger import Entry
from killpoint.values.cell import Cell, CellResult
from tests.harness.broken_runtimes import BLIND_VARIANTS

pytestmark = pytest.mark.slow

NEW = ("lease-outlived", "second-resumer", "continue-ended", "provider-forgot")


def engine(tmp_path: Path, name: str) -> Engine:
    return Engine(EngineConfig(work_root=tmp_path / name.replace(":", "_"), keep="none"))


def run(tmp_path: Path, runtime: str, where: str) -> CellResult:
    scenario, mode, schedule = where.split("/")
    cell = Cell(runtime, scenario, mode, "sqlite", kinds.parse_schedule(schedule))
    return engine(tmp_path, runtime).run_cell(cell)


def unexpected_kinds(result: CellResult) -> set[str]:
    return {f["kind"] for f in result.findings if not f["expected"] and f["verdict"] != "ok"}


@pytest.mark.parametrize(
    ("mode", "planned"),
    [
        (
            "tool-batch",
            ["second-resumer:1", "lease-outlived:2", "continue-ended:1", "provider-forgot:1"],
        ),
        # Nothing is written mid-run: no checkpoint a resumer owns, no run left to resume.
        ("runs", ["continue-ended:1"]),
    ],
)
def test_each_new_kind_offers_one_point_per_row(
    tmp_path: Path, mode: str, planned: list[str]
) -> None:
    """A row gets at most one point of each new kind, so the default matrix grows by a
    few cells per row."""
    base = engine(tmp_path, "plan").baseline(("reference", "research", mode, "sqlite"))
    assert planned == [str(p) for p in kinds.points_of(base, NEW)]


@pytest.mark.parametrize(
    ("variant", "kind", "point"), BLIND_VARIANTS, ids=[v[0] for v in BLIND_VARIANTS]
)
def test_each_blind_class_is_caught_and_the_reference_runtime_passes(
    tmp_path: Path, variant: str, kind: str, point: str
) -> None:
    """The broken variant's cell is unexpected and names its cause; the shipped reference
    runtime passes the same cell with no finding of that kind."""
    where = f"research/tool-batch/{point}"
    broken = run(tmp_path, f"tests.harness.broken_runtimes:{variant}", where)
    assert not broken.expected
    assert kind in unexpected_kinds(broken), [f["sentence"] for f in broken.findings]
    sound = run(tmp_path, "reference", where)
    assert (True, set()) == (sound.expected, unexpected_kinds(sound)), sound.detail
    assert kind not in {f["kind"] for f in sound.findings}


@pytest.mark.parametrize(
    ("variant", "where"),
    [
        ("unrenewed_lease", "parallel-fetch/tool/lease-outlived"),
        ("lease_ignored", "side-effects/tool-batch/second-resumer"),
        ("continuing_completed", "multi-run/tool-batch/continue-ended"),
        ("chain_only", "tool-error/tool/provider-forgot"),
    ],
)
def test_other_rows_catch_them_too(tmp_path: Path, variant: str, where: str) -> None:
    """Not one lucky row: the kind's point of another scenario and mode, planned from its
    own baseline, catches the same variant."""
    scenario, mode, name = where.split("/")
    runtime = f"tests.harness.broken_runtimes:{variant}"
    host = engine(tmp_path, runtime)
    row = (runtime, scenario, mode, "sqlite")
    (point,) = kinds.points_of(host.baseline(row), (name,))
    result = host.run_cell(Cell(*row, schedule=(point,)))
    assert not result.expected, result.detail


@pytest.mark.parametrize("point", ["lease-outlived:2", "second-resumer:1", "continue-ended:1"])
def test_a_second_caller_that_waits_for_the_owner_drives_nothing(
    tmp_path: Path, point: str
) -> None:
    """A runtime whose second resumer waits for the owner and returns the owner's result
    (or an ended run's) is sound: no two-drivers, no finding at all."""
    result = run(tmp_path, "tests.harness.waiting_runtime:waiting", f"research/tool-batch/{point}")
    assert ("ok", True) == (result.verdict, result.expected), result.detail
    assert [] == result.findings


class TestAtOnce:
    """`at_once` reads the model's log and the ledger of a cell: what makes two drivers
    is a step both took or acts that interleave, never both having done something."""

    @staticmethod
    def judge(
        turns: list[tuple[int, int]],
        started: list[tuple[str, int]],
        answered: list[tuple[int, int]] | None = None,
    ) -> str | None:
        """`turns` requested, `answered` of them (default: every one)."""
        ledger = [
            Entry("s", tool, "{}", None, "started", True, pid, float(n))
            for n, (tool, pid) in enumerate(started)
        ]
        replies = turns if answered is None else answered
        cell = SimpleNamespace(
            model_turns=lambda served=False: replies if served else turns,
            ledger=lambda: ledger,
        )
        a, b = SimpleNamespace(pid=1), SimpleNamespace(pid=2)
        return at_once(cell, a, b)  # type: ignore[arg-type]

    def test_one_after_the_other_is_not_at_once(self) -> None:
        """The first asks turn 3 and leaves the run PAUSED; the second runs the confirmed
        call and asks turn 4; the crashed worker's (pid 9) earlier acts do not count."""
        assert None is self.judge([(1, 9), (2, 9), (3, 1), (4, 2)], [("draft", 9), ("send", 2)])

    def test_the_same_model_turn_answered_to_both_is(self) -> None:
        assert "the model answered turn 3 to both" == self.judge([(3, 1), (3, 2)], [])

    def test_a_turn_the_model_failed_is_no_step_taken(self) -> None:
        """flaky-model, seen in a whole matrix: the first resumer asks turn 3, which fails
        twice (a 500 past the SDK's one retry) and ends its run ERROR; the second, claiming
        late, continues the ERROR run and asks turn 3 again, answered this time."""
        turns = [(2, 1), (3, 1), (3, 1), (3, 2), (4, 2)]
        answered = [(2, 1), (3, 2), (4, 2)]
        assert None is self.judge(turns, [("q", 1), ("q2", 2)], answered)

    def test_the_same_tool_call_run_by_both_is(self) -> None:
        assert "both ran fetch {}" == self.judge([(2, 1)], [("fetch", 1), ("fetch", 2)])

    def test_acts_that_interleave_are(self) -> None:
        assert "their acts interleave in the model's log" == self.judge(
            [(3, 1), (4, 2), (5, 1)], []
        )
        assert "their acts interleave in the ledger" == self.judge(
            [], [("a", 1), ("b", 2), ("c", 1)]
        )

    def test_logs_that_disagree_on_who_came_first_are(self) -> None:
        """Turns say 1 then 2, the ledger 2 then 1: each acted after the other began."""
        assert "the model's log and the ledger disagree on which drove first" == self.judge(
            [(3, 1), (4, 2)], [("a", 2), ("b", 1)]
        )
