"""Search for a failing crash schedule with hypothesis, and shrink it to a minimal one.

A schedule is a sequence of crashes: a first kill anywhere, then crashes of the
resumed runs at later boundaries. Hypothesis explores schedules and, once one gets
an unexpected verdict, shrinks it: fewer crashes, earlier points.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from hypothesis import HealthCheck, Phase, find, settings
from hypothesis import strategies as st
from hypothesis.errors import NoSuchExample

from killpoint import kinds
from killpoint.engine.engine import Engine
from killpoint.judge.baseline import Baseline
from killpoint.values.cell import Cell, CellResult
from killpoint.values.points import CrashPoint, PointError, Schedule


@dataclass
class SearchResult:
    tried: dict[Schedule, CellResult] = field(default_factory=dict)
    minimal: CellResult | None = None


def schedules(base: Baseline, depth: int) -> st.SearchStrategy[Schedule]:
    firsts = kinds.points_of(base, kinds.kills())
    laters = kinds.points_of(base, ("after-checkpoint",))

    def valid(schedule: Schedule) -> bool:
        # Each later crash must come after the checkpoints that survived the one before.
        try:
            held = kinds.plan(base, schedule[0]).checkpoints
        except PointError:
            return False
        for point in schedule[1:]:
            if point.k <= held:
                return False
            held = point.k
        return True

    return (
        st.tuples(st.sampled_from(firsts), st.lists(st.sampled_from(laters), max_size=depth - 1))
        .map(lambda pair: Schedule((pair[0], *pair[1])))
        .filter(valid)
    )


def search(
    engine: Engine,
    row: tuple[str, str, str, str],
    *,
    depth: int = 2,
    max_examples: int = 30,
    seed: int = 0,
) -> SearchResult:
    base = engine.baseline(row)
    result = SearchResult()
    if base.problem or base.nondeterministic:
        cell = Cell(*row, schedule=Schedule((CrashPoint("mid-model", 1),)))
        result.minimal = engine.run_cell(cell)
        return result

    def fails(schedule: Schedule) -> bool:
        if schedule not in result.tried:
            result.tried[schedule] = engine.run_cell(Cell(*row, schedule=schedule))
        return not result.tried[schedule].expected

    try:
        minimal = find(
            schedules(base, depth),
            fails,
            settings=settings(
                max_examples=max_examples,
                database=None,
                deadline=None,
                phases=(Phase.generate, Phase.shrink),
                suppress_health_check=list(HealthCheck),
            ),
            random=random.Random(seed),
        )
    except NoSuchExample:
        return result
    result.minimal = result.tried[minimal]
    return result
