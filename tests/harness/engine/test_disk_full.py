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

from killpoint.engine import engine as engine_module
from killpoint.engine.campaign import Campaign, CampaignConfig
from killpoint.stores import outage
from tests.harness.ticking_campaign import TickingCampaign
from tests.helpers import mounted_tmpfs

REPO = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


@pytest.fixture
def small_tmpfs(tmp_path: Path) -> Iterator[Path]:
    """A 4 MB tmpfs (root only: nothing else gives a filesystem that fills up for real)."""
    with mounted_tmpfs(tmp_path / "small", "4m") as mnt:
        yield mnt


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


@pytest.mark.postgres
def test_killpoints_own_writes_in_a_worker_on_a_full_disk_are_killpoints_fault(
    small_tmpfs: Path, pg_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store on a server, the engine's own looks at the free space made blind, and a
    tool that fills the disk under the cell's folder: the ledger's line after it and the
    scripted model's state meet ENOSPC inside the worker, where the runtime records a
    failed tool or model call of its own. Only the worker can tell; every cell is
    unavailable naming the disk, nothing is charged to the runtime, no row is blamed."""
    monkeypatch.setattr(engine_module, "FULL_BELOW", 0)
    monkeypatch.setattr(outage, "FULL_BELOW", 0)
    work = small_tmpfs / "work"
    work.mkdir()
    config = CampaignConfig.from_options(
        scenarios="tests.harness.scenarios_for_tests:FILLING", points="boundaries",
        modes="tool-batch", workers=1, store=pg_url, work_root=str(work),
    )  # fmt: skip
    result = Campaign(config).run()
    assert not result.interrupted and result.cells
    assert not result.failing, [(c.verdict, c.detail) for c in result.cells]
    assert not result.row_groups()
    for cell in result.cells:
        assert "unavailable" == cell.verdict, (cell.id, cell.detail)
        assert ["disk-full"] == [f["kind"] for f in cell.findings]
        assert "ENOSPC" in cell.detail and str(work) in cell.detail


def test_tmpdir_on_a_2_mib_tmpfs_judges_each_cell_or_names_the_disk(tmp_path: Path) -> None:
    """The issue's probe: TMPDIR on a 2 MiB tmpfs (the work folder goes there), four rows
    at once. Each cell is judged or unavailable naming the full disk; none is `missed`
    (it was 3 rows of 4), none is charged to the runtime, exit 0."""
    if os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs to fill needs root (mount -t tmpfs)")
    mnt = tmp_path / "t"
    mnt.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mnt)],
                          capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        result = subprocess.run(
            [sys.executable, "-m", "killpoint.cli.main", "matrix",
             "--scenarios", "research,parallel-fetch,long-chain,large-output",
             "--modes", "tool-batch", "--points", "boundaries", "--workers", "4",
             "--json", str(tmp_path / "m.json"), "--report", str(tmp_path / "m.html")],
            cwd=REPO, capture_output=True, text=True, timeout=600,
            env={**os.environ, "TMPDIR": str(mnt)},
        )  # fmt: skip
    finally:
        subprocess.run(["umount", "-l", str(mnt)], check=False)
    assert 0 == result.returncode, result.stdout[-3000:] + result.stderr[-3000:]
    assert "Traceback" not in result.stderr
    cells = json.loads((tmp_path / "m.json").read_text())["cells"]
    assert cells
    for c in cells:
        assert c["expected"] and c["verdict"] not in {"missed", "unresumable", "hung", "error"}
        if c["verdict"] == "unavailable":
            assert ["disk-full"] == [f["kind"] for f in c["findings"]], c["detail"]
            assert "ENOSPC" in c["detail"] and str(mnt) in c["detail"]
