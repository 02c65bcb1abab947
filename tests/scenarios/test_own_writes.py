"""killpoint's own writes on a full disk, for real (a small tmpfs): the ledger's line
and the scripted model's state call the worker's hook before the error goes on, and a
real worker tells its engine, whoever caught the error in between."""

# ruff: noqa: SIM300
from __future__ import annotations

import errno
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from killpoint.scenarios import Ledger
from killpoint.scenarios.own_writes import on_refused
from killpoint.workers.processes import Worker
from killpoint.workers.worker import WorkerSpec
from tests.helpers import mounted_tmpfs


@pytest.fixture
def full_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 1 MB tmpfs (each test fills it)."""
    with mounted_tmpfs(tmp_path / "small", "1m") as mnt:
        yield mnt


def test_a_ledger_line_the_disk_refuses_is_told_then_raised(full_tmpfs: Path) -> None:
    told: list[str] = []
    on_refused(told.append)
    try:
        fill = os.open(full_tmpfs / "filler", os.O_WRONLY | os.O_CREAT)
        with pytest.raises(OSError):
            while True:
                os.write(fill, b"\0" * 65536)
        os.close(fill)
        with pytest.raises(OSError) as raised:
            Ledger(full_tmpfs / "ledger.jsonl", "research").record(
                "search", {"q": "x"}, phase="started"
            )
    finally:
        on_refused(None)
    assert errno.ENOSPC == raised.value.errno
    assert 1 == len(told)
    assert told[0].startswith("killpoint's own write to the ledger failed: [Errno 28]")


def test_a_worker_tells_the_engine_of_its_own_writes_the_disk_refused(
    full_tmpfs: Path, tmp_path: Path
) -> None:
    """The FILLING scenario's tool fills the disk under the worker's folder (the store is
    elsewhere); the writes of the ledger and the model after it fail, and the engine's
    Worker holds what they were."""
    spec = WorkerSpec(
        runtime="reference", scenario="tests.harness.scenarios_for_tests:FILLING",
        mode="tool-batch", store_url=f"sqlite:///{tmp_path / 'store.db'}",
        work_dir=str(full_tmpfs), session_id="s",
    )  # fmt: skip
    worker = Worker(spec, [], time.monotonic())
    worker.join(time.monotonic() + 120)
    assert worker.own_writes, worker.finished
    assert all("No space left on device" in text for text in worker.own_writes)
    assert any("killpoint's own write to" in e.text for e in worker.timeline)
