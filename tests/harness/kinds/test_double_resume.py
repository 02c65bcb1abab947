# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Two resumers released together: two drivers are two that drove the same stretch at
once, never one that took up a run the other had left PAUSED (real workers, real
SQLite; the order is forced by what the store holds, not by timing)."""

from __future__ import annotations

from pathlib import Path

import pytest

from killpoint import kinds
from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig
from killpoint.values.cell import Cell

pytestmark = pytest.mark.slow

HANDOVER = "tests.harness.forced_handover:handover"


def test_a_resumer_that_takes_up_the_run_the_other_paused_is_no_second_driver(
    tmp_path: Path,
) -> None:
    """The flaky `two-drivers` of `reference/confirm/tool-batch/sqlite/double-resume:3`,
    forced: one resumer drives turn 3 and leaves the run PAUSED, the other answers the
    pause and drives turn 4, the first is refused when it comes back. Both did something,
    one after the other: ok, and the timeline says how the run changed hands."""
    engine = Engine(EngineConfig(work_root=tmp_path / "work", keep="none"))
    cell = Cell(
        HANDOVER, "confirm", "tool-batch", "sqlite", kinds.parse_schedule("double-resume:3")
    )
    result = engine.run_cell(cell)
    assert [] == [f["sentence"] for f in result.findings if f["kind"] == "two-drivers"]
    assert ("ok", True) == (result.verdict, result.expected), result.detail
    handed = [e[1] for e in result.timeline if e[1].startswith("one resumer after the other")]
    assert 1 == len(handed), result.timeline
    assert "model turn 3" in handed[0] and "model turn 4" in handed[0]
