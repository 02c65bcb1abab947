"""Unmounting a FUSE mount: umount2 as root, fusermount3 otherwise."""

from __future__ import annotations

import ctypes
import ctypes.util
import errno
import os
import shutil
import subprocess
from pathlib import Path

from killpoint.errors import MountBusy, UnmountFailed

MNT_DETACH = 2  # <sys/mount.h>: detach now, let go of the filesystem when it is unused


def unmount(mountpoint: Path, *, lazy: bool = False) -> None:
    """Unmount `mountpoint`; MountBusy when files are open in it and `lazy` is not set.

    A lazy unmount detaches the mount from the tree at once (it leaves /proc/mounts and
    the folder is a plain folder again); the filesystem lives on, unreachable by path,
    until the last open file in it is closed."""
    if os.geteuid() == 0:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        if libc.umount2(os.fsencode(mountpoint), MNT_DETACH if lazy else 0) == 0:
            return
        code = ctypes.get_errno()
        if code == errno.EBUSY:
            raise MountBusy(code, f"killpoint: {mountpoint} is busy", str(mountpoint))
        raise UnmountFailed(code, f"killpoint: cannot unmount {mountpoint}", str(mountpoint))
    fusermount = shutil.which("fusermount3")
    if fusermount is None:
        raise UnmountFailed(
            errno.ENOENT, "killpoint: fusermount3 is needed to unmount (apt-get install fuse3)"
        )
    args = [fusermount, "-u", *(["-z"] if lazy else []), "--", str(mountpoint)]
    done = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        message = done.stderr.strip()
        if "busy" in message:
            raise MountBusy(errno.EBUSY, f"killpoint: {message}", str(mountpoint))
        raise UnmountFailed(errno.EIO, f"killpoint: {message}", str(mountpoint))


def is_mounted(mountpoint: Path) -> bool:
    """Whether /proc/mounts lists `mountpoint` (as the kernel spells it: octal escapes)."""
    target = str(mountpoint.absolute())
    for char, code in (("\\", "\\134"), (" ", "\\040"), ("\t", "\\011"), ("\n", "\\012")):
        target = target.replace(char, code)
    with open("/proc/mounts") as mounts:
        return any(line.split(" ")[1] == target for line in mounts)


def holders(mountpoint: Path) -> list[str]:
    """The processes holding a file (or a working folder) under `mountpoint`, as
    'pid (name): path' lines: what a MountBusy names."""
    root = str(mountpoint.absolute())
    found: list[str] = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            name = Path(f"/proc/{pid}/comm").read_text().strip()
            links = [f"/proc/{pid}/cwd"] + [
                f"/proc/{pid}/fd/{fd}" for fd in os.listdir(f"/proc/{pid}/fd")
            ]
        except OSError:
            continue  # gone, or not ours to read
        for link in links:
            try:
                target = os.readlink(link)
            except OSError:
                continue
            if target == root or target.startswith(root + "/"):
                found.append(f"{pid} ({name}): {target}")
    return found
