"""Whether power-loss cells can run on this machine, and if not, why (the skip reason)."""

from __future__ import annotations

import errno
import functools
import os
import shutil
import tempfile
from pathlib import Path

FUSE_DEVICE = Path("/dev/fuse")
# Set (to anything) to run as if FUSE were missing here: power-loss cells are skipped.
NO_FUSE_ENV = "KILLPOINT_NO_FUSE"


def _library_problem() -> str | None:
    try:
        import mfusepy
    except ImportError:
        return "mfusepy is not installed (pip install 'killpoint[powerloss]')"
    except OSError as exc:  # mfusepy raises it when no libfuse is found
        return f"libfuse 3 is missing ({exc}); install it: apt-get install fuse3"
    if mfusepy.fuse_version_major != 3:
        return (
            f"mfusepy found libfuse {mfusepy.fuse_version_major}, not 3; "
            "install libfuse 3: apt-get install fuse3"
        )
    return None


def _device_problem() -> str | None:
    if not FUSE_DEVICE.exists():
        return (
            f"{FUSE_DEVICE} does not exist (load the fuse module: modprobe fuse; in a "
            "container, pass the device: --device /dev/fuse --cap-add SYS_ADMIN)"
        )
    try:
        os.close(os.open(FUSE_DEVICE, os.O_RDWR))
    except OSError as exc:
        if exc.errno in (errno.EACCES, errno.EPERM):
            return f"{FUSE_DEVICE} cannot be opened: {exc.strerror} (run as root, or fix its mode)"
        return f"{FUSE_DEVICE} cannot be opened: {exc.strerror}"
    if os.geteuid() != 0 and shutil.which("fusermount3") is None:
        return "not root and fusermount3 is missing to mount as a user (apt-get install fuse3)"
    return None


def _mount_problem() -> str | None:
    from killpoint.errors import MountFailed
    from killpoint.powerloss.mount import PowerLossFS

    with tempfile.TemporaryDirectory(prefix="killpoint-fuse-probe-") as folder:
        try:
            with PowerLossFS(Path(folder) / "backing", Path(folder) / "mnt") as fs:
                (fs.mountpoint / "probe").write_bytes(b"probe")
        except (MountFailed, OSError) as exc:
            return f"a test mount failed: {exc}"
    return None


def available() -> str | None:
    """None when the power-loss filesystem mounts and serves here; otherwise the reason,
    naming what to install or allow. Checked once per process (the last check mounts),
    except for KILLPOINT_NO_FUSE, read each time."""
    if os.environ.get(NO_FUSE_ENV):
        return f"{NO_FUSE_ENV} is set: killpoint runs as if FUSE were missing here"
    return _problem()


@functools.cache
def _problem() -> str | None:
    return _library_problem() or _device_problem() or _mount_problem()
