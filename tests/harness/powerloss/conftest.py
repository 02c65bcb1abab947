"""Power-loss tests: skipped with the reason where FUSE cannot mount (failed instead when
KILLPOINT_REQUIRE_FUSE is set, as .ci/run does), and never leaving a mount behind."""

# ruff: noqa: SIM300

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

REQUIRE_FUSE_ENV = "KILLPOINT_REQUIRE_FUSE"


def mounts_under(folder: Path) -> list[str]:
    """The mountpoints in /proc/mounts under `folder`."""
    root = str(folder.absolute())
    with open("/proc/mounts") as mounts:
        points = [line.split(" ")[1] for line in mounts]
    return [p for p in points if p == root or p.startswith(root + "/")]


def need_fuse(what: str = "power-loss tests") -> None:
    """Skip `what` (or, with KILLPOINT_REQUIRE_FUSE set, as in CI, fail) unless the
    power-loss filesystem mounts here."""
    from killpoint.powerloss import available

    reason = available()
    if reason is None:
        return
    if os.environ.get(REQUIRE_FUSE_ENV):
        pytest.fail(f"FUSE is required ({REQUIRE_FUSE_ENV} is set): {reason}", pytrace=False)
    pytest.skip(f"{what} skipped: {reason}")


@pytest.fixture
def fuse() -> None:
    need_fuse()


def write(path: Path, data: bytes, *, offset: int = 0, sync: bool = False) -> None:
    """`data` at `offset` of `path` (made if missing), synced with `sync`."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        os.pwrite(fd, data, offset)
        if sync:
            os.fsync(fd)
    finally:
        os.close(fd)


def sync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@pytest.fixture
def cell(tmp_path: Path, fuse: None) -> Iterator[Path]:
    """A cell's folder; after the test, nothing may still be mounted under it."""
    yield tmp_path
    assert [] == mounts_under(tmp_path)
