"""PerUrl: one object per store URL, the oldest disposed past the limit."""

# ruff: noqa: SIM300
from __future__ import annotations

from pathlib import Path

import psutil

from killpoint import kinds
from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig
from killpoint.stores.per_url import PerUrl, release
from killpoint.values.cell import Cell


def test_one_object_per_url_and_the_oldest_disposed() -> None:
    disposed: list[str] = []
    cache: PerUrl[list[str]] = PerUrl(lambda url: [url], lambda item: disposed.append(item[0]), 2)

    first = cache("a")
    assert first is cache("a")
    cache("b")
    assert [] == disposed
    cache("c")
    assert ["a"] == disposed
    assert first is not cache("a")  # made again once disposed
    assert ["a", "b"] == disposed


def test_release_disposes_a_url_in_every_cache_and_only_that_url() -> None:
    disposed: list[str] = []
    engines: PerUrl[str] = PerUrl(lambda url: f"engine {url}", disposed.append)
    stores: PerUrl[str] = PerUrl(lambda url: f"store {url}", disposed.append)
    engines("sqlite:///a.db"), engines("sqlite:///b.db"), stores("sqlite:///a.db")

    release("sqlite:///a.db")

    assert ["engine sqlite:///a.db", "store sqlite:///a.db"] == sorted(disposed)
    assert (1, 0) == (len(engines), len(stores))
    release("sqlite:///a.db")  # nothing left to dispose: no error, nothing disposed twice
    assert 2 == len(disposed)


def test_a_cell_leaves_no_descriptor_of_its_store_open(tmp_path: Path) -> None:
    """The engine reads each cell's store through the adapter's cache; once the cell is
    done its folder is gone, and so must be every descriptor of store.db, -wal and -shm."""
    engine = Engine(EngineConfig(work_root=tmp_path, keep="none"))
    for point in ("after-checkpoint:1", "after-checkpoint:2", "after-checkpoint:3"):
        cell = Cell("reference", "research", "tool-batch", "sqlite", kinds.parse_schedule(point))
        assert "ok" == engine.run_cell(cell).verdict
    held = [f.path for f in psutil.Process().open_files() if str(tmp_path) in f.path]
    assert [] == held
