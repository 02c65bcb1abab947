"""A full disk under killpoint: the work folder on a small tmpfs filled mid-campaign, and a
report path on a full device."""

# ruff: noqa: SIM300
from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.harness.ticking_campaign import TickingCampaign

REPO = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MB tmpfs (root only: nothing else gives a filesystem that fills up for real)."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill needs root (mount -t tmpfs)")
    mnt = tmp_path / "small"
    mnt.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mnt)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mnt
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)


def fill(folder: Path) -> None:
    """Write a file until the filesystem refuses (ENOSPC)."""
    fd = os.open(folder / "filler", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError as exc:
        assert errno.ENOSPC == exc.errno
    finally:
        os.close(fd)
    # What a 64 KB write left: the last blocks too.
    fd = os.open(folder / "filler-tail", os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 512)
    except OSError:
        pass
    finally:
        os.close(fd)


def test_a_work_folder_that_fills_up_mid_campaign(small_tmpfs: Path, tmp_path: Path) -> None:
    """The work folder fills up a few cells in: the cells after that name ENOSPC in their
    finding (`disk-full`, not a bare `missed` with empty stderr), none counts against the
    runtime, and the campaign ends with every cell written."""
    run = TickingCampaign(
        tmp_path, "--points", "boundaries", "--timeout", "20", "--work-dir", str(small_tmpfs)
    )
    try:
        run.ticks(2 * 3 + 2)
        fill(small_tmpfs)
        _, err = run.finish(timeout=300)
    finally:
        run.close()
    assert 0 == run.proc.returncode, err
    assert "Traceback" not in err
    cells = json.loads(run.json.read_text())["cells"]
    full = [c for c in cells if c["verdict"] == "unavailable"]
    assert full, [(c["verdict"], c["detail"]) for c in cells]
    for c in full:
        assert ["disk-full"] == [f["kind"] for f in c["findings"]]
        assert "ENOSPC" in c["detail"] and str(small_tmpfs) in c["detail"]
    assert all(c["expected"] for c in cells), [(c["verdict"], c["detail"]) for c in cells]
    assert run.html.stat().st_size > 0


def test_a_report_path_on_a_full_device_goes_to_a_fallback(tmp_path: Path) -> None:
    """`--json /dev/full`: the write at the end fails with ENOSPC; the JSON goes to a
    fallback file, named in one line, and the exit status is 3."""
    if not os.access("/dev/full", os.W_OK):
        pytest.skip("no writable /dev/full")
    result = subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "matrix", "--scenarios", "research",
         "--modes", "tool-batch", "--points", "after-checkpoint:1",
         "--json", "/dev/full", "--report", str(tmp_path / "m.html")],
        cwd=REPO, capture_output=True, text=True, timeout=240,
    )  # fmt: skip
    assert 3 == result.returncode, result.stderr
    lines = [x for x in result.stderr.splitlines() if "/dev/full" in x]
    assert 1 == len(lines), result.stderr
    fallback = Path(lines[0].rpartition("written to ")[2].removesuffix(" instead"))
    try:
        assert 1 == len(json.loads(fallback.read_text())["cells"])
    finally:
        fallback.unlink(missing_ok=True)
    assert "Traceback" not in result.stderr
    assert (tmp_path / "m.html").exists()
    assert Path("/dev/full").is_char_device()
