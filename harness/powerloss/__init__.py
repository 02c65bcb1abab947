"""Power loss: a store folder on a filesystem in user space (FUSE) that passes I/O
through, records what has been synced, and at the cut leaves the folder's durable
image: what the machine losing power would leave on disk. See docs/powerloss.md.

Why mfusepy (ctypes over libfuse 3's high-level API) rather than pyfuse3, compared here
in November 2026:
- maintenance: both are kept (mfusepy 3.1.1, March 2026, by ratarmount's author, a fork
  of fusepy; pyfuse3 3.5.0, June 2026, under the libfuse organisation);
- install: mfusepy is one pure-Python file over Debian's libfuse3 (package `fuse3`);
  pyfuse3 ships as source only and builds a Cython extension against libfuse3-dev,
  with pkg-config and a C compiler, on every fresh machine;
- API: mfusepy is path-based and blocking, which fits a server process of its own;
  pyfuse3 is inode-based (the filesystem keeps its own inode table and lookup counts)
  and async, and needs trio (its asyncio mode still installs trio);
- threading: mfusepy runs libfuse's loop single- or multi-threaded, each callback
  taking the GIL; pyfuse3 serves from one event loop;
- speed: 300 SQLite commits (WAL), each followed by a fresh reader, over a passthrough of
  each on tmpfs: mfusepy 0.50-0.66 s, pyfuse3's own passthrough example 0.73-1.0 s with
  the same one-second attribute timeouts (3.0-5.1 s with its default of none); on
  tmpfs directly, 0.07-0.10 s.
mfusepy: no build step, no async framework, as fast or faster for this work.
"""

from __future__ import annotations

from killpoint.errors import CutError, MountBusy, MountFailed
from killpoint.powerloss.availability import available
from killpoint.powerloss.cut_report import (
    DURABLE,
    NOT_DURABLE,
    REPLACED,
    RESTORED,
    CutReport,
    FileReport,
)
from killpoint.powerloss.mount import PowerLossFS, stop_helper
from killpoint.powerloss.umount import is_mounted

__all__ = [
    "DURABLE",
    "NOT_DURABLE",
    "REPLACED",
    "RESTORED",
    "CutError",
    "CutReport",
    "FileReport",
    "MountBusy",
    "MountFailed",
    "PowerLossFS",
    "available",
    "is_mounted",
    "stop_helper",
]
