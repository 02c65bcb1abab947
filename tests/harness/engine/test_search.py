"""Hypothesis searches crash schedules and shrinks a failing one to a minimal schedule."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.database import ExampleDatabase

from killpoint import kinds
from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig
from killpoint.engine.search import database_at, database_key, find_failing, schedules, search
from killpoint.judge.baseline import Baseline
from killpoint.report.document import read_json
from killpoint.values.points import CrashPoint
from tests.harness.cli.test_signals import short_tmp  # noqa: F401  (a fixture)

pytestmark = pytest.mark.slow


def test_a_failing_runtime_shrinks_to_one_early_crash(tmp_path: Path) -> None:
    """Against a runtime whose resume re-runs finished batches, the search reports a
    failing schedule, shrunk to a single crash at the first boundary."""
    engine = Engine(EngineConfig(work_root=tmp_path, keep="none"))
    row = ("tests.harness.broken_runtimes:rerun_finished", "research", "tool-batch", "sqlite")
    found = search(engine, row, max_examples=10, seed=3)
    assert found.minimal is not None
    assert ["after-checkpoint:1"] == found.minimal.schedule
    assert not found.minimal.expected


def test_the_reference_runtime_has_no_failing_schedule(tmp_path: Path) -> None:
    """A handful of random schedules (up to two crashes) on the reference runtime all pass."""
    engine = Engine(EngineConfig(work_root=tmp_path, keep="none"))
    found = search(engine, ("reference", "research", "tool-batch", "sqlite"), max_examples=6)
    assert found.minimal is None
    assert len(found.tried) >= 3


BASE = Baseline(
    "reference",
    "research",
    "tool-batch",
    "sqlite",
    trace=[
        "run:1:start",
        "model:1:received",
        "checkpoint:1:writing",
        "checkpoint:1:committing",
        "checkpoint:1:landed",
        "model:2:received",
        "checkpoint:2:writing",
        "checkpoint:2:committing",
        "checkpoint:2:landed",
        "model:3:received",
        "checkpoint:3:writing",
        "checkpoint:3:committing",
        "checkpoint:3:landed",
    ],
)


@settings(max_examples=60, deadline=None)
@given(st.data())
def test_generated_schedules_only_crash_later_each_time(data: st.DataObject) -> None:
    """Every generated schedule's later crashes are at boundaries past what survived the
    crash before (a schedule the engine could not reach is never generated)."""
    schedule = data.draw(schedules(BASE, depth=3))
    held = kinds.plan(BASE, schedule[0]).checkpoints
    for point in schedule[1:]:
        assert "after-checkpoint" == point.kind
        assert point.k > held
        held = point.k
    assert isinstance(schedule[0], CrashPoint)


class TestExampleDatabase:
    """Failures are kept in a hypothesis directory database and tried first next time."""

    QUIET: ClassVar[dict[str, Any]] = {
        "deadline": None,
        "suppress_health_check": list(HealthCheck),
        "max_examples": 200,
    }

    def run(self, database: ExampleDatabase | None, seed: int) -> tuple[int | None, list[int]]:
        tried: list[int] = []

        def fails(n: int) -> bool:
            tried.append(n)
            return n >= 700

        found = find_failing(
            st.integers(0, 1000),  # type: ignore[arg-type]
            fails,  # type: ignore[arg-type]
            settings(database=database, **self.QUIET),  # type: ignore[arg-type]
            seed=seed,
            key=database_key(("r", "s", "m", "sqlite"), 2),
        )
        return found, tried  # type: ignore[return-value]

    def test_a_failure_found_once_is_the_first_tried_next_time(self, tmp_path: Path) -> None:
        database = database_at(tmp_path / "db")
        found, tried = self.run(database, seed=1)
        assert 700 == found  # shrunk to the boundary
        assert 700 != tried[0]
        assert any((tmp_path / "db").iterdir())  # kept on disk, in hypothesis's format
        again, tried_again = self.run(database_at(tmp_path / "db"), seed=2)
        assert 700 == again
        assert 700 == tried_again[0]

    def test_without_a_database_nothing_is_replayed(self, tmp_path: Path) -> None:
        self.run(database_at(tmp_path / "db"), seed=1)
        _, tried = self.run(None, seed=2)
        assert 700 != tried[0]

    def test_the_key_is_per_row_and_depth(self) -> None:
        row = ("reference", "research", "tool-batch", "sqlite")
        keys = {
            database_key(row, 1),
            database_key(row, 2),
            database_key((*row[:2], "runs", row[3]), 1),
        }
        assert 3 == len(keys)


def test_search_writes_json_and_html_and_keeps_its_database(
    tmp_path: Path,
    short_tmp: Path,  # noqa: F811
) -> None:
    """`killpoint search` writes a matrix-like report of the schedules tried, and its
    failure lands in the database folder asked for."""
    from tests.harness.cli.test_rerun import killpoint

    runtime = "tests.harness.broken_runtimes:rerun_finished"
    # The failing cell's folder is kept where TMPDIR says: here, not the machine's /dev/shm.
    done = killpoint(
        "search", "--runtime", runtime, "--max-examples", "5", "--seed", "3",
        "--database", "db", "--json", "s.json", "--report", "s.html", cwd=tmp_path,
        env={"TMPDIR": str(short_tmp)},
    )  # fmt: skip
    assert 1 == done.returncode, done.stdout + done.stderr
    assert done.stdout.strip().splitlines()[-1].startswith("written: ")
    document = json.loads((tmp_path / "s.json").read_text())
    minimal = f"{runtime}/research/tool-batch/sqlite/after-checkpoint:1"
    assert minimal == document["search"]["minimal"]
    kept = [c["kept"] for c in document["cells"]]
    assert all(k is None or Path(k).is_relative_to(short_tmp) for k in kept), kept
    assert "db" == document["search"]["database"]
    assert minimal in [c["id"] for c in document["cells"]]
    assert not next(c for c in document["cells"] if c["id"] == minimal)["expected"]
    assert 1 == len(document["baselines"])
    assert minimal in (tmp_path / "s.html").read_text()
    assert any((tmp_path / "db").iterdir())
    read_json(tmp_path / "s.json")  # a report killpoint reads back (its schema holds)
