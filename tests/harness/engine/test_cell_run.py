# ruff: noqa: SIM300 - tests assert `expected == actual`
"""One story per cell: its timeline, its ledger lines and its evidence on one clock; the
sides named are the sides compared; a "matches" line never stands beside a failing verdict
without saying what else failed. On a real agno cell (issue 56's
`agno/side-effects/tool-batch/sqlite/sigstop:1`) and a real reference row, real workers,
real SQLite."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from killpoint import kinds
from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig
from killpoint.report.html_cells import Strings, cell_data
from killpoint.values.cell import Cell, CellResult

pytestmark = pytest.mark.slow

_OFFSET = re.compile(r"at ([+-])(\d+(?:\.\d+)?) (ms|s)\b")


def seconds(line: str) -> float:
    """The time of a ledger line ("... at +1.3 s", "... at +850 ms") on the cell's clock."""
    sign, value, unit = _OFFSET.search(line).groups()  # type: ignore[union-attr]
    t = float(value) / (1000 if unit == "ms" else 1)
    return -t if sign == "-" else t


@pytest.fixture(scope="module")
def stale(tmp_path_factory: pytest.TempPathFactory) -> CellResult:
    """agno has no run ownership: the worker paused after checkpoint 1 and woken after the
    takeover finished sends the e-mail and the SMS again, and writes over the store."""
    pytest.importorskip("agno")
    engine = Engine(EngineConfig(work_root=tmp_path_factory.mktemp("work"), keep="none"))
    cell = Cell("agno", "side-effects", "tool-batch", "sqlite", kinds.parse_schedule("sigstop:1"))
    return engine.run_cell(cell)


def test_the_ledger_is_on_the_timelines_clock(stale: CellResult) -> None:
    """Issue 56: the timeline paused the worker at 1.149 s and woke it at 2.720 s, while the
    ledger said that worker sent its e-mail at +2.075 s, the ledger's zero being its own
    first line: a reader concluded a stopped process sent an e-mail. On one clock, what the
    stale worker did comes after it was woken."""
    woken = next(e.t for e in stale.timeline if e.text == "worker woken (SIGCONT)")
    pid = next(
        m.group(1)
        for e in stale.timeline
        if (m := re.fullmatch(r"worker started \(pid (\d+)\)", e.text))
    )
    lines = [
        line
        for f in stale.findings
        if f["kind"] in ("effect-duplicated", "effect-repeated")
        for line in f["evidence"]
        if f"by pid {pid} " in line and "started" in line
    ]
    late = [line for line in lines if seconds(line) > woken - 0.1]
    assert late, (woken, lines)  # the stale worker's repeats, after its wake
    assert all(seconds(line) > 0 for line in lines), lines


def test_a_matching_session_beside_a_failing_verdict_says_what_else_failed(
    stale: CellResult,
) -> None:
    """Issue 56: "the session ... matches that of the baseline, field by field" stood on the
    line before `verdict: corrupt`."""
    assert (stale.verdict, stale.expected) == ("corrupt", False)
    said = [e.text for e in stale.timeline if "field by field" in e.text]
    assert said, [e.text for e in stale.timeline]
    assert all("the verdict comes from what else was found: stale-write" in t for t in said)


def test_the_panel_names_the_sides_each_finding_compared(stale: CellResult) -> None:
    """Issue 56: "Sides compared: baseline and store after the stale worker woke", while the
    deciding difference compared the store after the takeover with the store after the
    stale worker woke. The panel names each pair with what compared it."""
    compared = cell_data(stale.to_json(), Strings())["compared"]
    pairs = {(a, b): kinds for a, b, kinds in compared}
    assert ["stale-write"] == pairs[
        ("store after the takeover", "store after the stale worker woke")
    ]
    assert ("baseline", "store after the stale worker woke") not in pairs  # nothing differed


def test_a_fast_path_cell_reads_on_its_own_clock(tmp_path: Path) -> None:
    """A row's kill cells resume from a traced worker's copies: its events happened before
    the cell began, so they come before zero, and its stops for other cells' copies are
    left out, said in one line; the timeline never runs backwards."""
    from killpoint.engine.campaign import Campaign
    from killpoint.engine.options import CampaignConfig

    config = CampaignConfig.from_options(
        scenarios="research", modes="tool-batch", points="after-checkpoint,mid-model",
        work_dir=str(tmp_path), keep="none", seed=3, workers=1, kills="fast",
    )  # fmt: skip
    result = Campaign(config).run()
    later = [c for c in result.cells if c.schedule == ["after-checkpoint:3"]]
    assert later, [c.id for c in result.cells]
    times = [e.t for e in later[0].timeline]
    copied = next(n for n, e in enumerate(later[0].timeline) if e.kind == "kill")
    assert all(t <= 0.05 for t in times[:copied]), times  # the trace: before the cell
    assert times[copied:] == sorted(times[copied:]), times
    texts = [e.text for e in later[0].timeline]
    assert any("earlier stops of the traced worker" in t for t in texts), texts
    assert sum("tracer paused (SIGSTOP)" in t for t in texts) == 1, texts
