"""killpoint's own store server stopped and restarted under a campaign (a server this module
starts, not the session's), and its work folder filling up: the cells touched say so, the
campaign goes on, and what finished is written."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
from pathlib import Path

import psutil
import pytest

from tests.conftest import LocalPostgres
from tests.harness.ticking_campaign import TickingCampaign

pytestmark = [pytest.mark.slow, pytest.mark.postgres]


def campaign(tmp_path: Path, url: str, *extra: str) -> TickingCampaign:
    return TickingCampaign(
        tmp_path, "--points", "all", "--store", url, "--timeout", "20",
        "--work-dir", str(tmp_path / "work"), *extra,
    )  # fmt: skip


def test_a_server_stopped_and_restarted_mid_campaign(
    own_pg: tuple[LocalPostgres, str], tmp_path: Path
) -> None:
    """The server is stopped a few cells in and started again: the campaign finishes,
    the cells it touched are `unavailable` naming the store (not `ok`, not unexpected),
    the others are judged as usual; JSON and HTML are written, no cell folder and no
    process (forkserver included) is left."""
    local, url = own_pg
    run = campaign(tmp_path, url)
    try:
        run.ticks(2 * 3 + 8)  # both baselines, then a few cells
        family = run.family()
        local.halt()
        local.resume()
        _, err = run.finish(timeout=400)
    finally:
        run.close()
    assert 0 == run.proc.returncode, err
    assert "Traceback" not in err
    document = json.loads(run.json.read_text())
    assert run.html.stat().st_size > 0
    cells = document["cells"]
    assert len(cells) == document["summary"]["planned"]
    touched = [c for c in cells if c["verdict"] == "unavailable"]
    assert touched, [c["verdict"] for c in cells]
    for c in touched:
        assert c["expected"] is True
        assert ["store-unavailable"] == [f["kind"] for f in c["findings"]]
        assert "the store server" in c["detail"], c["detail"]
    judged = [c for c in cells if c["verdict"] != "unavailable"]
    assert judged and all(c["expected"] for c in judged), [
        (c["id"], c["verdict"], c["detail"]) for c in judged
    ]
    assert "could not be judged" in err
    left = [p for p in (tmp_path / "work").glob("*/*")]
    assert [] == left
    _, alive = psutil.wait_procs(family, timeout=30)
    assert [] == [p.pid for p in alive]


def test_a_server_that_stays_down_costs_the_cells_and_nothing_else(
    own_pg: tuple[LocalPostgres, str], tmp_path: Path
) -> None:
    """Down for good after a few cells: every cell after that is `unavailable` without
    waiting out the whole campaign; the ones before are judged; exit 0 and both reports."""
    local, url = own_pg
    run = campaign(tmp_path, url, "--timeout", "3")
    try:
        run.ticks(2 * 3 + 4)
        local.halt()
        _, err = run.finish(timeout=400)
    finally:
        local.resume()
        run.close()
    assert 0 == run.proc.returncode, err
    cells = json.loads(run.json.read_text())["cells"]
    assert all(c["expected"] for c in cells), [(c["id"], c["detail"]) for c in cells]
    assert "unavailable" in {c["verdict"] for c in cells}
    assert run.html.exists()
