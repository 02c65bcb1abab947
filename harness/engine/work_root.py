"""Where a campaign's cells keep their stores, ledgers and worker logs.

By default in RAM (/dev/shm) when the machine has room there. killpoint crashes
processes, not machines: after a SIGKILL the kernel still holds every write the worker
made, so a disk under the store adds only the time of its fsyncs (7-10% of a cell's CPU
where we measured it), not coverage. Power loss is not simulated either way. TMPDIR,
when set, is a choice the user made and wins; so does --work-dir.
"""

from __future__ import annotations

import contextlib
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


def make_work_root(owner: object, parent: Path | None = None) -> Path:
    """A fresh folder for `owner`'s cells; removed again when `owner` is gone (or the
    process exits) if nothing was kept in it."""
    root = Path(tempfile.mkdtemp(prefix="killpoint-", dir=parent or default_parent()))
    weakref.finalize(owner, _remove_if_empty, root)
    return root


def _remove_if_empty(root: Path) -> None:
    with contextlib.suppress(OSError):  # kept cells inside, or already gone
        root.rmdir()


def check_work_dir(path: Path) -> None:
    """Raise OSError unless cells can be written under `path` (created if missing)."""
    path.mkdir(parents=True, exist_ok=True)
    probe = Path(tempfile.mkdtemp(prefix=".killpoint-probe-", dir=path))
    probe.rmdir()
