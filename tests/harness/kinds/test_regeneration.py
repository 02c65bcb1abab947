# ruff: noqa: SIM300 - tests assert `expected == actual`
"""A kill, then a model that does not repeat itself: the reference runtime survives every
behaviour, and a variant that keys idempotency on the model's call id is caught by
`regenerate-ids` and by no kind that was there before (real workers, real SQLite)."""

from __future__ import annotations

from pathlib import Path

import pytest

from killpoint import kinds
from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig
from killpoint.scenarios.behaviours import BEHAVIOURS
from killpoint.values.cell import Cell, CellResult

pytestmark = pytest.mark.slow

BROKEN = "tests.harness.broken_runtimes:call_id_key"
ROW = ("side-effects-idempotent", "tool-batch", "sqlite")


def engine(tmp_path: Path, name: str) -> Engine:
    return Engine(EngineConfig(work_root=tmp_path / name.replace(":", "_"), keep="none"))


def unexpected_kinds(result: CellResult) -> set[str]:
    return {f["kind"] for f in result.findings if not f["expected"] and f["verdict"] != "ok"}


@pytest.mark.parametrize(
    ("mode", "planned"),
    [
        ("tool-batch", ["regenerate-ids:2", "reorder:2", "respell:2", "replan:2"]),
        ("tool", ["regenerate-ids:2", "reorder:2", "respell:2", "replan:2"]),
        # Nothing is written mid-run: a run killed mid-way is lost whole, nobody asks again.
        ("runs", []),
    ],
)
def test_points_stand_where_a_resume_asks_again(
    tmp_path: Path, mode: str, planned: list[str]
) -> None:
    """side-effects: a kill in batch 1 (the charge) leaves no checkpoint to resume from,
    so each kind stands at batch 2 (email + SMS) alone."""
    base = engine(tmp_path, "plan").baseline(("reference", "side-effects", mode, "sqlite"))
    assert planned == [str(p) for p in kinds.points_of(base, BEHAVIOURS)]


def test_the_behaviours_are_in_the_faults_group() -> None:
    """The default matrix (`all`) and `--points faults` run them."""
    groups = kinds.groups()
    assert set(BEHAVIOURS) <= set(groups["faults"]) and set(BEHAVIOURS) <= set(groups["all"])


def test_a_call_id_key_is_caught_by_regenerate_ids(tmp_path: Path) -> None:
    """The re-issued sends ran again under new keys; the finding says so in words, with
    both call ids and the two ledger lines; the shipped runtime passes the same cell."""
    cell = Cell(BROKEN, ROW[0], ROW[1], ROW[2], kinds.parse_schedule("regenerate-ids:2"))
    broken = engine(tmp_path, "broken").run_cell(cell)
    assert ("duplicated", False) == (broken.verdict, broken.expected)
    reissued = [f for f in broken.findings if f["kind"] == "effect-reissued"]
    assert {"send_email", "send_sms"} == {f["tool"] for f in reissued}
    for f in reissued:
        before, after = f["facts"]["before"], f["facts"]["after"]
        assert before != after and before.startswith("call_") and after.startswith("call_")
        assert f["sentence"].endswith(f"({before} before the crash, {after} after)")
        assert "ran twice: the resumed model re-issued it under a new call id" in f["sentence"]
        assert 2 == len(f["evidence"])
        assert before in f["evidence"][0] and after in f["evidence"][1]
    sound = engine(tmp_path, "sound").run_cell(
        Cell("reference", ROW[0], ROW[1], ROW[2], kinds.parse_schedule("regenerate-ids:2"))
    )
    assert ("ok", True, set()) == (sound.verdict, sound.expected, unexpected_kinds(sound))


def test_no_kind_that_was_there_before_catches_the_call_id_key(tmp_path: Path) -> None:
    """Every point of every other kind on the row passes the variant: a model that repeats
    itself gives the re-asked call its old id, so the old key still matches."""
    host = engine(tmp_path, "others")
    row = (BROKEN, *ROW)
    skipped = kinds.unavailable(kinds.names(), "sqlite")  # a server's restart, FUSE, ...
    others = [k for k in kinds.names() if k not in BEHAVIOURS and k not in skipped]
    points = kinds.points_of(host.baseline(row), others)
    assert len({p.kind for p in points}) >= 8, points  # kills, takeovers, faults, ...
    results = [host.run_cell(Cell(*row, schedule=(p,))) for p in points]
    assert [] == [(r.id, r.verdict, unexpected_kinds(r)) for r in results if not r.expected]


@pytest.mark.parametrize("behaviour", BEHAVIOURS)
def test_the_reference_runtime_survives_every_behaviour(tmp_path: Path, behaviour: str) -> None:
    """At each of the kind's points on the side-effect rows, the resumed turn takes the
    journaled reply: nothing differs from the baseline, nothing repeats beyond the bound."""
    host = engine(tmp_path, behaviour)
    ran = 0
    for scenario in ("side-effects", "side-effects-idempotent"):
        row = ("reference", scenario, "tool-batch", "sqlite")
        for point in kinds.points_of(host.baseline(row), (behaviour,)):
            result = host.run_cell(Cell(*row, schedule=(point,)))
            assert (True, set()) == (result.expected, unexpected_kinds(result)), result.detail
            ran += 1
    assert ran >= 2
