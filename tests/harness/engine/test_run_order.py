"""The order cells run in: one of each (row, kind) first, then what failed before, then the
rest; drawn from the seed, the same for a shard's cells as for the whole campaign's."""

# ruff: noqa: SIM300
from __future__ import annotations

from killpoint import kinds
from killpoint.engine.run_order import FAILED_BEFORE, FIRST_OF_KIND, REST, RunOrder, kind_of
from killpoint.values.cell import Cell
from killpoint.values.shard import Shard


def row(scenario: str, *schedules: str) -> list[Cell]:
    return [
        Cell("reference", scenario, "tool-batch", "sqlite", kinds.parse_schedule(s))
        for s in schedules
    ]


ROWS = [
    row(
        "research",
        "after-checkpoint:1",
        "after-checkpoint:2",
        "after-checkpoint:3",
        "mid-batch:2:0",
        "mid-batch:3:0",
        "sigstop:1",
        "sigstop:2",
    ),
    row("parallel", "after-checkpoint:1", "after-checkpoint:2", "mid-model:1", "mid-model:2"),
]


class TestInformative:
    def test_one_cell_of_each_row_and_kind_comes_first(self) -> None:
        cells = RunOrder(7).ordered(ROWS)
        kinds_per_row = {(c.scenario, kind_of(c)) for r in ROWS for c in r}
        first = cells[: len(kinds_per_row)]
        assert kinds_per_row == {(c.scenario, kind_of(c)) for c in first}
        assert sorted(c.id for r in ROWS for c in r) == sorted(c.id for c in cells)

    def test_cells_that_failed_before_come_next(self) -> None:
        order = RunOrder(7)
        keys = order.keys(ROWS[0])
        rest = [c for c in ROWS[0] if keys[c.id][0] == REST]
        failed = RunOrder(7, frozenset({rest[-1].id}))
        cells = failed.ordered(ROWS)
        tiers = [failed.keys(next(r for r in ROWS if c in r))[c.id][0] for c in cells]
        assert tiers == sorted(tiers)
        assert FAILED_BEFORE == failed.keys(ROWS[0])[rest[-1].id][0]
        assert cells.index(rest[-1]) == sum(1 for t in tiers if t == FIRST_OF_KIND)

    def test_the_order_is_the_seeds(self) -> None:
        assert RunOrder(7).ordered(ROWS) == RunOrder(7).ordered(ROWS)
        orders = {tuple(c.id for c in RunOrder(seed).ordered(ROWS)) for seed in range(8)}
        assert len(orders) > 1

    def test_a_shard_runs_its_cells_in_the_whole_campaigns_order(self) -> None:
        """A cell's key is its own: a shard, which plans only its own cells of each row,
        still gives each the key the whole row gave it."""
        order = RunOrder(11)
        whole = order.ordered(ROWS)
        for index in (1, 2):
            shard = Shard(index, 2)
            mine = [c for c in whole if shard.owns(c.id)]
            keys = {}
            for n, r in enumerate(ROWS):
                keys.update(order.keys(r, n))  # the whole row's keys, as a shard computes
            assert mine == sorted(mine, key=lambda c: keys[c.id])


def test_plan_runs_row_after_row_in_the_plans_order() -> None:
    assert [c for r in ROWS for c in r] == RunOrder(7, order="plan").ordered(ROWS)


def test_a_baseline_goes_after_the_first_cells_of_planned_rows_and_before_the_rest() -> None:
    """A broken runtime shows in most rows: the first cells of the rows already planned
    run before the next baseline; every other cell waits for the baselines."""
    order = RunOrder(7)
    keys = order.keys(ROWS[0])
    firsts = [k for k in keys.values() if k[0] == FIRST_OF_KIND]
    others = [k for k in keys.values() if k[0] != FIRST_OF_KIND]
    baseline = order.baseline_key(1)
    assert all(k < baseline for k in firsts)
    assert all(baseline < k for k in others)
    plan = RunOrder(7, order="plan")
    assert all(plan.baseline_key(5) < k for k in plan.keys(ROWS[0], 0).values())
