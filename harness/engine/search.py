"""Search for a failing crash schedule with hypothesis, and shrink it to a minimal one.

A schedule is a sequence of crashes: a first kill anywhere, then crashes of the
resumed runs at later boundaries. Hypothesis explores schedules and, once one gets
an unexpected verdict, shrinks it: fewer crashes, earlier points.

Failures are kept in a hypothesis example database (a directory, `.killpoint/search`
by default: hypothesis's own format, so it can be shared as its directory databases are,
committed or cached by CI) under a key per row and depth; the next search of that row
replays them first (hypothesis's reuse phase), before generating anything new.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from hypothesis import HealthCheck, Phase, Verbosity, given, settings
from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase, ExampleDatabase

from killpoint import kinds
from killpoint.engine.engine import Engine
from killpoint.errors import PointError
from killpoint.judge.baseline import Baseline
from killpoint.values.cell import Cell, CellResult, Row
from killpoint.values.points import Schedule


@dataclass
class SearchResult:
    tried: dict[Schedule, CellResult] = field(default_factory=dict)  # in the order tried
    minimal: CellResult | None = None
    baseline: Baseline | None = None


def database_at(folder: Path | None) -> ExampleDatabase | None:
    """The example database in `folder` (None: no database, nothing kept or replayed)."""
    return None if folder is None else DirectoryBasedExampleDatabase(str(folder))


def database_key(row: Row, depth: int) -> bytes:
    """One key per row and depth: a failure of one row is never replayed on another
    (hypothesis's own default key, the condition's source, is the same for every row)."""
    return f"killpoint.search/{'/'.join(row)}/depth={depth}".encode()


def schedules(base: Baseline, depth: int) -> st.SearchStrategy[Schedule]:
    # Kinds that cannot run here (power loss without FUSE) would fail as harness errors.
    cannot = kinds.unavailable(kinds.kills(), base.store)
    firsts = kinds.points_of(base, [k for k in kinds.kills() if k not in cannot])
    laters = kinds.boundaries(base)

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


class _Found(Exception):
    """Raised by the property on a failing schedule: what hypothesis shrinks."""


def find_failing(
    strategy: st.SearchStrategy[Schedule],
    fails: Callable[[Schedule], bool],
    chosen: settings,
    *,
    seed: int,
    key: bytes,
) -> Schedule | None:
    """hypothesis.find, seeded and with a database at once: find() takes a `random`, and
    seeds the test with @seed, which turns the database off (a seeded run is meant to be
    reproducible, not to replay). So the seed and the database key are set as find()
    itself sets its key, on the test, and the settings keep their database."""
    last: list[Schedule] = []

    @chosen
    @given(strategy)
    def test(schedule: Schedule) -> None:
        if fails(schedule):
            last[:] = [schedule]
            raise _Found

    test._hypothesis_internal_use_seed = seed  # type: ignore[attr-defined]
    test._hypothesis_internal_database_key = key  # type: ignore[attr-defined]
    try:
        test()
    except _Found:
        return last[0]  # hypothesis replays the minimal failing schedule last
    return None


def search(
    engine: Engine,
    row: Row,
    *,
    depth: int = 2,
    max_examples: int = 30,
    seed: int = 0,
    database: ExampleDatabase | None = None,
) -> SearchResult:
    base = engine.baseline(row)
    result = SearchResult(baseline=base)
    if base.problem or base.nondeterministic:
        cell = Cell(*row, schedule=Schedule((kinds.stand_in(),)))
        result.minimal = result.tried[cell.schedule] = engine.run_cell(cell)
        return result

    def fails(schedule: Schedule) -> bool:
        if schedule not in result.tried:
            result.tried[schedule] = engine.run_cell(Cell(*row, schedule=schedule))
        return not result.tried[schedule].expected

    minimal = find_failing(
        schedules(base, depth),
        fails,
        settings(
            max_examples=max_examples,
            database=database,
            deadline=None,
            phases=(Phase.reuse, Phase.generate, Phase.shrink),
            suppress_health_check=list(HealthCheck),
            report_multiple_bugs=False,
            verbosity=Verbosity.quiet,
        ),
        seed=seed,
        key=database_key(row, depth),
    )
    if minimal is None:
        return result
    result.minimal = result.tried[minimal]
    return result
