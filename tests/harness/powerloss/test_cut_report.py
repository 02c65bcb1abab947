"""The cut report's bounds: what its JSON lists of a long log, and its summary."""

# ruff: noqa: SIM300

from __future__ import annotations

from pathlib import Path

from killpoint.powerloss.cut_report import DROPPED, KEPT, MAX_OPS, TORN, CutReport, OpReport


def report(fates: list[str]) -> CutReport:
    ops = tuple(
        OpReport(n, "write", "store.db-wal", 4096 * n, 4096, fate, 512 if fate == TORN else 0)
        for n, fate in enumerate(fates, start=1)
    )
    return CutReport(Path("/image"), {"name": "torn-seq", "seed": 3}, {}, (), ops)


def test_a_long_log_lists_torn_then_kept_then_dropped_up_to_the_bound() -> None:
    """1000 dropped, 400 kept, 2 torn: the JSON lists the 2 torn and 298 kept, in order,
    and counts the 1102 left off; read back, the counts are the same."""
    fates = [DROPPED] * 1000 + [KEPT] * 400 + [TORN] * 2
    data = report(fates).to_json()

    listed = [op["fate"] for op in data["ops"]]
    assert (MAX_OPS, 1102) == (len(listed), data["ops_left_off"])
    assert {TORN: 2, KEPT: 298} == {f: listed.count(f) for f in (TORN, KEPT)}
    assert [op["seq"] for op in data["ops"]] == sorted(op["seq"] for op in data["ops"])
    assert 1102 == CutReport.from_json(data).ops_left_off


def test_the_summary_names_the_model_and_the_first_operations_it_kept() -> None:
    lines = report([KEPT] * 25 + [DROPPED]).summary().splitlines()

    assert "cut torn-seq, seed 3: 25 unsynced ops kept, 0 torn, 1 dropped" == lines[0]
    assert "#1 write store.db-wal @4096+4096: kept" == lines[1]
    assert "... and 5 more kept or torn" == lines[-1]
    assert 22 == len(lines)


def test_the_synced_cut_adds_no_line() -> None:
    """The default's summary is as before cut models: one line per file, nothing else."""
    synced = CutReport(Path("/image"), {"name": "synced", "seed": 0}, {}, (), report([DROPPED]).ops)

    assert "" == synced.summary()
