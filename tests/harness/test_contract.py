"""The contract checks against runtimes that break one promise each, in their baseline too
(so no comparison with the baseline can see it): real workers, real kills, real SQLite."""

from __future__ import annotations

from pathlib import Path

import pytest

from killpoint.cell import Cell, CellResult
from killpoint.engine import Engine, EngineConfig
from killpoint.points import parse_schedule

from .broken_runtimes import CONTRACT_VARIANTS

pytestmark = pytest.mark.slow


def run(tmp_path: Path, runtime: str, where: str) -> CellResult:
    scenario, mode, schedule = where.split("/")
    engine = Engine(EngineConfig(work_root=tmp_path / runtime.replace(":", "_"), keep="none"))
    return engine.run_cell(Cell(runtime, scenario, mode, "sqlite", parse_schedule(schedule)))


def unexpected_kinds(result: CellResult) -> set[str]:
    return {f["kind"] for f in result.findings if not f["expected"] and f["verdict"] != "ok"}


@pytest.mark.parametrize(
    ("variant", "kind", "where"), CONTRACT_VARIANTS, ids=[v[0] for v in CONTRACT_VARIANTS]
)
def test_only_its_check_names_each_broken_promise(
    tmp_path: Path, variant: str, kind: str, where: str
) -> None:
    """The broken variant's cell is unexpected with exactly one kind of finding, the check
    made for its promise; the shipped reference runtime passes the same cell."""
    broken = run(tmp_path, f"tests.harness.broken_runtimes:{variant}", where)
    assert not broken.expected
    assert {kind} == unexpected_kinds(broken), [f["sentence"] for f in broken.findings]
    sound = run(tmp_path, "reference", where)
    assert (True, set()) == (sound.expected, unexpected_kinds(sound)), sound.detail
    assert kind not in {f["kind"] for f in sound.findings}
