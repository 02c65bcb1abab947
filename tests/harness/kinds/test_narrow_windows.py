# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Plans that reach the narrow windows: ownership after the heartbeat has ticked and after
a resume, a second resumer and a forgetful provider at every boundary (a few per row, from
the seed), clocks that disagree, power loss in `all` where FUSE mounts. Each new point
catches its broken variant of the reference runtime, which the points that were there
before pass (real workers, real SQLite)."""

from __future__ import annotations

from pathlib import Path

import pytest

from killpoint import kinds
from killpoint.engine.campaign import Campaign, CampaignConfig
from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig
from killpoint.judge.baseline import Baseline
from killpoint.values.cell import Cell
from killpoint.values.points import CrashPoint
from tests.harness.broken_runtimes import NARROW_VARIANTS

pytestmark = pytest.mark.slow


def engine(tmp_path: Path, name: str) -> Engine:
    return Engine(EngineConfig(work_root=tmp_path / name.replace(":", "_"), keep="none"))


def unexpected(host: Engine, row: tuple[str, str, str, str], point: CrashPoint) -> set[str]:
    result = host.run_cell(Cell(*row, schedule=(point,)))
    return {f["kind"] for f in result.findings if not f["expected"] and f["verdict"] != "ok"}


@pytest.mark.parametrize(
    ("variant", "kind", "catches", "where", "before"),
    NARROW_VARIANTS,
    ids=[v[0] for v in NARROW_VARIANTS],
)
def test_each_new_point_catches_what_the_old_ones_pass(
    tmp_path: Path,
    variant: str,
    kind: str,
    catches: str,
    where: str,
    before: tuple[str, ...],
) -> None:
    """On the row, every point of the kinds that were there before passes the variant,
    one planned point of the new kind names it, and the reference runtime passes that
    point too."""
    scenario, mode = where.split("/")
    runtime = f"tests.harness.broken_runtimes:{variant}"
    host = engine(tmp_path, runtime)
    row = (runtime, scenario, mode, "sqlite")
    base = host.baseline(row)
    for point in kinds.points_of(base, before):
        assert set() == unexpected(host, row, point), point
    planned = kinds.points_of(base, (catches,))
    assert planned
    caught = [p for p in planned if kind in unexpected(host, row, p)]
    assert caught, planned
    sound = engine(tmp_path, "reference")
    assert set() == unexpected(sound, ("reference", scenario, mode, "sqlite"), caught[0])


def test_second_resumer_and_provider_forgot_stand_at_every_boundary(tmp_path: Path) -> None:
    """research/tool-batch: four boundaries with the run in flight, three after which the
    run's next write follows a batch; long-chain's many are cut to three per row, the same
    three for the same seed and other ones for another."""
    host = engine(tmp_path, "plan")
    base = host.baseline(("reference", "research", "tool-batch", "sqlite"))
    assert ["second-resumer:1", "second-resumer:2", "second-resumer:3"] == [
        str(p) for p in kinds.points_of(base, ("second-resumer",))
    ]
    assert [f"provider-forgot:{k}" for k in (1, 2, 3, 4)] == [
        str(p) for p in kinds.points_of(base, ("provider-forgot",))
    ]
    long = host.baseline(("reference", "long-chain", "tool-batch", "sqlite"))
    offered = kinds.points_of(long, ("second-resumer", "provider-forgot"))
    assert len(offered) > 6

    def sampled(seed: int) -> list[str]:
        return [str(p) for p in kinds.sample(offered, f"{seed}/row")]

    assert 6 == len(sampled(1))
    assert sampled(1) == sampled(1)
    assert any(sampled(1) != sampled(s) for s in range(2, 6))
    assert [str(p) for p in offered] == [
        str(p) for p in kinds.sample(offered, "1/row", named=("second-resumer", "provider-forgot"))
    ]


def test_a_campaign_samples_from_its_seed_and_gives_every_point_of_a_named_kind(
    tmp_path: Path,
) -> None:
    def planned(points: str, seed: int) -> list[str]:
        config = CampaignConfig.from_options(
            scenarios="long-chain",
            modes="tool-batch",
            points=points,
            seed=seed,
            keep="none",
            work_root=str(tmp_path / f"work-{points}-{seed}"),
        )
        campaign = Campaign(config)
        (row,), _ = campaign.rows()
        return [str(c.schedule) for c in campaign.cells_for(campaign.engine.baseline(row))]

    grouped = [p for p in planned("faults", 3) if p.startswith("second-resumer")]
    assert 3 == len(grouped)
    named = planned("second-resumer", 3)
    assert len(named) > 3 and set(grouped) <= set(named)


def test_a_clock_is_set_off_only_where_the_adapter_reports_its_leases(tmp_path: Path) -> None:
    base = engine(tmp_path, "plan").baseline(("reference", "research", "tool-batch", "sqlite"))
    assert ["clock-behind:1:20"] == [str(p) for p in kinds.points_of(base, ("clock-behind",))]
    silent = Baseline("reference", "research", "tool-batch", "sqlite", trace=base.trace)
    silent.analyse()
    assert [] == kinds.points_of(silent, ("clock-behind", "clock-ahead"))


def test_power_loss_is_in_all_exactly_where_fuse_mounts(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without FUSE it is left out of `all`, and the matrix's banner says why."""
    from killpoint.powerloss import available

    here = available()
    assert ("power-loss" in kinds.groups()["all"]) == (here is None)
    monkeypatch.setenv("KILLPOINT_NO_FUSE", "1")
    assert "power-loss" not in kinds.groups()["all"]
    assert "KILLPOINT_NO_FUSE" in kinds.left_out_of_all()["power-loss"]


def test_a_second_resumer_may_continue_a_run_its_owner_left_paused(tmp_path: Path) -> None:
    """confirm/tool: the resumer's first checkpoint after 4 PAUSES the run for a
    confirmation (its lease released); the second resumer continuing it is no second
    driver, and the cell says why nothing was refused."""
    host = engine(tmp_path, "reference")
    row = ("reference", "confirm", "tool", "sqlite")
    point = CrashPoint("second-resumer", 4)
    assert point in kinds.points_of(host.baseline(row), ("second-resumer",))
    result = host.run_cell(Cell(*row, schedule=(point,)))
    assert "ok" == result.verdict, (result.findings, result.detail)
    assert any("left the run PAUSED" in e.text for e in result.timeline), result.timeline
