"""A runtime that rewrites its JSON store in place without syncing it (tests/harness/
json_file_runtime.py): every kill resumes it, the synced cut loses its runs, and a torn
write leaves a file that no longer parses, caught as corrupt. Written atomically (a
temporary file, synced, renamed), the same runtime passes every cut model."""

from __future__ import annotations

from pathlib import Path

import pytest

from killpoint import kinds
from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig
from killpoint.values.cell import Cell, CellResult
from tests.harness.kinds.test_power_loss import fuse  # noqa: F401  (the fixture)
from tests.harness.powerloss.conftest import mounts_under

IN_PLACE = "tests.harness.json_file_runtime:adapter"
ATOMIC = "tests.harness.json_file_runtime:atomic"
ROW = ("research", "every-batch", "sqlite")


def cells(tmp_path: Path, runtime: str, group: str, cut: str = "synced") -> list[CellResult]:
    engine = Engine(EngineConfig(work_root=tmp_path / f"{cut}-{group}", keep="none", cut=cut))
    row = (runtime, *ROW)
    base = engine.baseline(row)
    assert base.problem is None, base.problem
    points = kinds.points_of(base, kinds.groups()[group])
    assert points
    found = [engine.run_cell(Cell(*row, schedule=(p,))) for p in points]
    engine.sweep()
    assert mounts_under(tmp_path) == []
    return found


def unexpected(results: list[CellResult]) -> list[tuple[str, str, str]]:
    return [(r.id, r.verdict, r.detail) for r in results if not r.expected]


def test_no_kill_finds_the_in_place_write(tmp_path: Path) -> None:
    """A process crash leaves the write whole in the page cache: every kill resumes."""
    assert unexpected(cells(tmp_path, IN_PLACE, "kills")) == []


@pytest.mark.usefixtures("fuse")
def test_a_torn_write_leaves_a_store_that_does_not_parse(tmp_path: Path) -> None:
    """torn-op keeps the first sectors of the last write: each acknowledged run's cell is
    corrupt, the JSON named; the synced cut of the same points loses the runs instead."""
    torn = cells(tmp_path, IN_PLACE, "power-loss", cut="torn-op")
    corrupt = [r for r in torn if not r.expected]
    assert corrupt and all(r.verdict == "corrupt" for r in corrupt), unexpected(torn)
    assert all("runs.json" in r.detail and "not valid JSON" in r.detail for r in corrupt)
    synced = {r.id: r for r in cells(tmp_path, IN_PLACE, "power-loss")}
    assert {synced[r.id].verdict for r in corrupt} == {"lost"}


@pytest.mark.usefixtures("fuse")
@pytest.mark.parametrize("cut", ["synced", "torn-op", "torn-seq", "reorder"])
def test_written_atomically_it_survives_every_cut(tmp_path: Path, cut: str) -> None:
    assert unexpected(cells(tmp_path, ATOMIC, "power-loss", cut=cut)) == []
