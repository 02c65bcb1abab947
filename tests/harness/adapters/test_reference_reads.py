"""The engine's sqlite3 reads of a reference store say what the runtime's own Store says."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from killpoint.adapters.reference import ReferenceAdapter, normalise_run
from killpoint.adapters.reference_reads import SqliteReads
from killpoint.runtime import Store
from tests.harness.adapters.test_reference import run_in_process


@pytest.fixture(scope="module")
def written(tmp_path_factory: pytest.TempPathFactory) -> str:
    """A store the reference runtime wrote: `multi-run` (three runs) to its end."""
    folder = tmp_path_factory.mktemp("reads")
    run_in_process(ReferenceAdapter(), "multi-run", "tool", folder)
    return f"sqlite:///{folder / 'store.db'}"


def test_a_session_and_its_runs_read_as_the_runtime_reads_them(written: str) -> None:
    store = Store(written)
    try:
        expected = store.read_session("s")
        assert expected is not None and len(expected["run_ids"]) == 3
        expected_runs = [store.read_run(run_id) for run_id in expected["run_ids"]]
    finally:
        store.dispose()
    reads = SqliteReads(written)
    try:
        session, runs = reads.session("s")
        assert session == expected
        assert runs == expected_runs
        assert reads.progress("s") == sum(r.checkpoints for r in runs if r is not None) > 0
        assert reads.lease_deadline("s") is None  # every run ended: nobody owns them
        assert reads.integrity() == "ok"
        assert reads.session("no such session") == (None, [])
    finally:
        reads.close()


def test_the_adapter_reads_the_same_through_either_path(written: str) -> None:
    store = Store(written)
    try:
        session = store.read_session("s")
        assert session is not None
        by_store = {run_id: normalise_run(store.read_run(run_id)) for run_id in session["run_ids"]}
    finally:
        store.dispose()
    read = ReferenceAdapter().read_session(written, "s")
    assert read == {"state": session["state"], "runs": by_store}
    assert ReferenceAdapter().inspect(written, "s") == []


def test_a_store_without_tables_has_nothing_landed(tmp_path: Path) -> None:
    reads = SqliteReads(str(tmp_path / "empty.db"))
    try:
        assert reads.progress("s") == 0
        assert reads.session("s") == (None, [])
        assert reads.integrity() == "ok"
    finally:
        reads.close()


def test_a_writer_holding_the_lock_neither_blocks_the_reads_nor_shows_in_them(
    written: str,
) -> None:
    reads = SqliteReads(written + "?timeout=0.2")
    writer = sqlite3.connect(written.removeprefix("sqlite:///"), isolation_level=None)
    try:
        landed = reads.progress("s")
        writer.execute("BEGIN IMMEDIATE")
        writer.execute("UPDATE kp_runs SET checkpoints = checkpoints + 5")
        assert reads.progress("s") == landed  # read at once, and only what was committed
        writer.execute("ROLLBACK")
    finally:
        writer.close()
        reads.close()
