"""Where a campaign's cells keep their stores, ledgers and worker logs.

By default in RAM (/dev/shm) when the machine has room there. killpoint crashes
processes, not machines: after a SIGKILL the kernel still holds every write the worker
made, so a disk under the store adds only the time of its fsyncs (7-10% of a cell's CPU
where we measured it), not coverage. Power loss is not simulated either way. TMPDIR,
when set, is a choice the user made and wins; so does --work-dir.

A campaign killed outright (SIGKILL) cannot remove the folders of the cells it had in
flight, and in /dev/shm they hold RAM until the machine restarts. So each work folder
holds an `.owner` file, flock'd by its campaign for as long as that process lives, and a
folder is marked `.kept` when its cell keeps it. The next campaign that makes its folder
in the same place takes the lock of each `killpoint-*` folder there: one it gets has no
live owner, and loses every folder in it not marked kept.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import tempfile
import weakref
from pathlib import Path

RAM_DIR = Path("/dev/shm")
# Below this much free space the RAM folder is left alone: containers often give it
# 64 MB, and a full store would fail runs for a reason that is not the runtime's.
RAM_MIN_FREE = 1 << 30


def default_parent(ram_dir: Path = RAM_DIR) -> Path:
    """The folder that a campaign's own work folder is made in when none is given."""
    if "TMPDIR" not in os.environ and _roomy(ram_dir):
        return ram_dir
    return Path(tempfile.gettempdir())


def _roomy(folder: Path) -> bool:
    try:
        return os.access(folder, os.W_OK | os.X_OK) and (
            shutil.disk_usage(folder).free >= RAM_MIN_FREE
        )
    except OSError:
        return False


OWNER = ".owner"
KEPT = ".kept"


def make_work_root(owner: object, parent: Path | None = None) -> Path:
    """A fresh folder for `owner`'s cells, held by this process (its `.owner` lock);
    removed again when `owner` is gone (or the process exits) if nothing was kept in it."""
    root = Path(tempfile.mkdtemp(prefix="killpoint-", dir=parent or default_parent()))
    lock = open(root / OWNER, "w")  # noqa: SIM115  (held until the finalizer runs)
    fcntl.flock(lock, fcntl.LOCK_EX)  # a fresh file: nobody else can hold it
    lock.write(f"pid {os.getpid()}\n")
    lock.flush()
    weakref.finalize(owner, _release, root, lock)
    return root


def _release(root: Path, lock: object) -> None:
    # Unlinked while still locked: a sweeper that opened it meanwhile gets the lock only
    # once every unsettled folder is gone (the campaign's own sweep ran before this).
    with contextlib.suppress(OSError):
        (root / OWNER).unlink()
    lock.close()  # type: ignore[attr-defined]
    with contextlib.suppress(OSError):  # kept cells inside, or already gone
        root.rmdir()


def mark_kept(folder: Path) -> None:
    """`folder` stays for the user: no later sweep removes it."""
    with contextlib.suppress(OSError):  # its disk is full: it may go with a dead campaign
        (folder / KEPT).touch()


def sweep_orphans(parent: Path) -> list[Path]:
    """In `parent`, the folders of campaigns that ended without removing them (killed):
    each is removed unless its cell kept it; the work folder goes when nothing is left.
    The folders removed, for the caller to name."""
    removed: list[Path] = []
    try:
        roots = sorted(p for p in parent.glob("killpoint-*") if (p / OWNER).is_file())
    except OSError:
        return removed
    for root in roots:
        try:
            lock = open(root / OWNER, "r+")  # noqa: SIM115  (closed below)
        except OSError:
            continue  # gone meanwhile, or not ours to open
        with lock:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError:
                continue  # its campaign is alive
            for folder in sorted(root.iterdir()):
                if folder.is_dir() and not (folder / KEPT).exists():
                    shutil.rmtree(folder, ignore_errors=True)
                    removed.append(folder)
            with contextlib.suppress(OSError):
                (root / OWNER).unlink()
        with contextlib.suppress(OSError):
            root.rmdir()
    return removed


def check_work_dir(path: Path) -> None:
    """Raise OSError unless cells can be written under `path` (created if missing)."""
    path.mkdir(parents=True, exist_ok=True)
    probe = Path(tempfile.mkdtemp(prefix=".killpoint-probe-", dir=path))
    probe.rmdir()


__all__ = [
    "KEPT",
    "OWNER",
    "check_work_dir",
    "default_parent",
    "make_work_root",
    "mark_kept",
    "sweep_orphans",
]
