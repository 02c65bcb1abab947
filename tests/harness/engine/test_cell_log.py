"""A campaign's finished cells are kept compact: the evidence compressed, the head as
it was, every cell read back whole and equal."""

from __future__ import annotations

import gc
import weakref
from pathlib import Path

import pytest

from killpoint.engine.campaign import Campaign, CampaignConfig
from killpoint.engine.cell_log import EVIDENCE, CellLog, heads, select
from killpoint.values.cell import CellResult
from killpoint.values.timeline import Event


def cell(n: int, verdict: str = "ok") -> CellResult:
    return CellResult(
        id=f"reference/research/tool-batch/sqlite/after-checkpoint:{n}",
        runtime="reference",
        scenario="research",
        mode="tool-batch",
        store="sqlite",
        schedule=[f"after-checkpoint:{n}"],
        verdict=verdict,
        expected=verdict == "ok",
        duplicates=n % 3,
        bound=1,
        seconds=0.25 * n,
        detail="a sentence",
        findings=[{"kind": "lost", "group": f"lost:{n % 2}", "evidence": ["a", 1, None]}],
        sides={"baseline": "the uninterrupted run", "resumed": "the resumed run"},
        diff=[{"path": "$.total", "baseline": 3, "resumed": 2.5}],
        store_at_crash={"runs": [{"id": "r1", "status": "running", "steps": [1, 2]}]},
        stderr_tail="Traceback ‘quoted’ \u00e9\u4e2d\n\x00end",
        timeline=[Event(0.0, "start w1", "start", "w1"), Event(0.5, "kill -9", "kill", "w1")],
        exit_codes=[-9, 0],
        replay="killpoint replay x",
        kept=None,
    )


def test_each_cell_reads_back_equal_to_what_was_added() -> None:
    cells = [cell(n, "ok" if n % 2 else "lost") for n in range(1, 6)]
    log = CellLog(cells)
    assert len(log) == 5
    assert cells == list(log)
    assert cells[2] == log[2]
    assert cells[1:3] == log[1:3]
    assert all(isinstance(e, Event) for e in log[0].timeline)


def test_heads_hold_no_evidence_but_everything_else() -> None:
    log = CellLog([cell(1), cell(2)])
    for head, whole in zip(log.heads(), log, strict=True):
        assert (head.timeline, head.diff, head.stderr_tail, head.store_at_crash) == (
            [],
            [],
            "",
            None,
        )
        for name in set(vars(whole)) - set(EVIDENCE):
            assert getattr(head, name) == getattr(whole, name)
    assert heads(log) == log.heads()
    plain = [cell(1)]
    assert heads(plain) is plain


def test_select_decodes_only_the_cells_it_keeps() -> None:
    log = CellLog([cell(1, "lost"), cell(2), cell(3, "lost")])
    kept = select(log, lambda c: c.verdict == "lost")
    assert [c.schedule for c in kept] == [["after-checkpoint:1"], ["after-checkpoint:3"]]
    assert all(c.timeline for c in kept)
    assert select([cell(4)], lambda c: True)[0].timeline


def test_sort_moves_each_evidence_with_its_head() -> None:
    log = CellLog([cell(3), cell(1), cell(2)])
    log.sort(key=lambda c: c.seconds)
    assert [c.seconds for c in log] == [0.25, 0.5, 0.75]
    assert [c.diff for c in log] == [cell(n).diff for n in (1, 2, 3)]


def test_a_mark_in_a_finding_stays_a_field_set_on_a_read_cell_does_not() -> None:
    """What the class says: findings are the head's own; a read cell is a new object."""
    log = CellLog([cell(1)])
    log[0].findings[0]["accepted"] = "known"
    log[0].accepted = True
    assert log[0].findings[0]["accepted"] == "known"
    assert not log[0].accepted


def test_the_evidence_is_held_compressed() -> None:
    big = cell(1)
    big.stderr_tail = "the same line of a traceback\n" * 200
    log = CellLog([big])
    ((_, blob),) = log._cells
    assert len(blob) < len(big.stderr_tail) / 10


@pytest.mark.slow
def test_a_campaign_holds_no_whole_cell_once_it_is_read(tmp_path: Path) -> None:
    """Each finished cell reaches on_cell whole; afterwards the campaign keeps only its
    compact copy, not the object (a future or a list holding it would grow the engine
    by several KB a cell), and the copy reads back equal."""
    config = CampaignConfig.from_options(
        scenarios="research", modes="tool-batch", points="boundaries", workers=2,
        work_root=str(tmp_path / "work"),
    )  # fmt: skip
    seen: dict[str, CellResult] = {}
    alive: list[weakref.ref[CellResult]] = []

    def on_cell(r: CellResult) -> None:
        seen[r.id] = CellResult.from_json(r.to_json())
        alive.append(weakref.ref(r))

    result = Campaign(config).run(on_cell=on_cell)
    gc.collect()
    assert len(alive) == len(result.cells) >= 4
    assert [ref() for ref in alive if ref() is not None] == []
    assert isinstance(result.cells, CellLog)
    assert seen == {c.id: c for c in result.cells}
