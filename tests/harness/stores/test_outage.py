"""killpoint's own store server stopped and restarted under a campaign (a server this module
starts, not the session's), and its work folder filling up: the cells touched say so, the
campaign goes on, and what finished is written."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import psutil
import psycopg
import pytest
from sqlalchemy.engine import make_url

from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig
from killpoint.stores.postgresql import schema_of
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
    document = json.loads(run.json.read_text())
    cells = document["cells"]
    assert all(c["expected"] for c in cells), [(c["id"], c["detail"]) for c in cells]
    assert "unavailable" in {c["verdict"] for c in cells}
    assert run.html.exists()
    # The cells in flight when it went down made schemas that could not be dropped, even
    # at the end: each is named, with the statement that drops it, in the JSON and on stderr.
    left = document["leftover_stores"]
    assert left, err
    for store in left:
        assert store["store"].startswith("schema kp_")
        assert store["statement"].startswith('DROP SCHEMA IF EXISTS "kp_')
        assert f"drop it with: {store['statement']}" in err
    with psycopg.connect(libpq(url), autocommit=True) as conn:
        for store in left:
            conn.execute(store["statement"])
        assert (
            []
            == conn.execute(
                "SELECT nspname FROM pg_namespace WHERE nspname LIKE 'kp\\_%'"
            ).fetchall()
        )


def libpq(url: str) -> str:
    return make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def test_a_schema_that_cannot_be_dropped_is_kept_and_dropped_at_the_end(
    own_pg: tuple[LocalPostgres, str], tmp_path: Path
) -> None:
    """A cell's schema whose drop fails (the server is down) is named with its statement,
    and dropped when it is retried with the server back."""
    local, url = own_pg
    engine = Engine(EngineConfig(store=url, work_root=tmp_path / "work"))
    store = engine.stores.fresh(tmp_path)
    schema = schema_of(store)
    local.halt()
    try:
        engine.forget_store(store)
        [left] = engine.retry_leftovers()
        assert f'DROP SCHEMA IF EXISTS "{schema}" CASCADE;' == left.statement
        assert "schema " + str(schema) == left.to_json()["store"]
        assert left.reason
    finally:
        local.resume()
    assert [] == engine.retry_leftovers()
    with psycopg.connect(libpq(url), autocommit=True) as conn:
        found = conn.execute("SELECT 1 FROM pg_namespace WHERE nspname = %s", (schema,))
        assert found.fetchone() is None


FREEZE = 25  # seconds the postmaster stays stopped: far beyond --timeout


def test_a_server_frozen_longer_than_the_timeout(
    own_pg: tuple[LocalPostgres, str], tmp_path: Path
) -> None:
    """The postmaster stopped (SIGSTOP) for FREEZE seconds under --timeout 3: no new
    connection is answered. No cell waits for the whole freeze, the cells it touched are
    `unavailable` (not `hung`, nothing unexpected), and the campaign ends with exit 0."""
    local, url = own_pg
    run = campaign(tmp_path, url, "--timeout", "3")
    pid = local.postmaster_pid()
    assert pid is not None
    try:
        run.ticks(2 * 3 + 4)
        os.kill(pid, signal.SIGSTOP)
        try:
            time.sleep(FREEZE)  # the fault itself: how long the server does not answer
        finally:
            os.kill(pid, signal.SIGCONT)
        _, err = run.finish(timeout=400)
    finally:
        os.kill(pid, signal.SIGCONT)
        run.close()
    assert 0 == run.proc.returncode, err
    cells = json.loads(run.json.read_text())["cells"]
    assert all(c["expected"] for c in cells), [(c["id"], c["verdict"], c["detail"]) for c in cells]
    touched = [c for c in cells if c["verdict"] == "unavailable"]
    assert touched, [c["verdict"] for c in cells]
    assert all(["store-unavailable"] == [f["kind"] for f in c["findings"]] for c in touched)
    slowest = max(cells, key=lambda c: c["seconds"])
    assert slowest["seconds"] < FREEZE - 5, (slowest["id"], slowest["seconds"], slowest["detail"])
