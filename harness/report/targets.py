"""Where a campaign's reports go, and writing them so that nothing is lost or replaced.

A target is checked before any work starts, the way it will be written at the end:
- a regular file, or a path that does not exist yet: written atomically (a temporary
  file beside it, renamed over it); the check makes and removes that temporary file, so a
  folder where it cannot be made is refused at once;
- a symlink to a regular file: its target is written (the link stays a link);
- a FIFO or a character device (standard output, a process substitution `>(...)`):
  written in place, never replaced by a regular file;
- anything else (a folder, a block device, a socket): refused.
Two campaigns writing one report at once would silently overwrite each other: a regular
target is locked (an flock on a hidden file beside it) for the whole campaign, and the
second campaign is refused. The file means nothing once unlocked: its holder removes it
as it lets go, and one a killed campaign left is removed by whoever locks it next (the
next campaign, `report --from-journal`). A write that fails at the end (a full disk) goes
to a fallback file in the temporary folder instead, and the caller says where.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import stat
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

from killpoint.errors import TargetError

REPORTS = Path("reports")


def default_paths(runtime: str, folder: Path = REPORTS) -> tuple[Path, Path]:
    """`reports/<runtime>-matrix.json` and `.html`: one pair per runtime, so that an agno
    campaign does not overwrite the reference runtime's report."""
    slug = re.sub(r"[^A-Za-z0-9_.-]+", "-", runtime).strip("-.") or "runtime"
    return folder / f"{slug}-matrix.json", folder / f"{slug}-matrix.html"


def _kind(path: Path) -> str:
    """ "regular" (or missing), "stream" (a FIFO or a character device), or what it is."""
    try:
        mode = os.stat(path).st_mode  # follows a symlink to what it names
    except FileNotFoundError:
        return "regular"
    if stat.S_ISREG(mode):
        return "regular"
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode):
        return "stream"
    if stat.S_ISDIR(mode):
        return "a folder"
    return "not a file"


def _file_above(path: Path) -> Path | None:
    """The nearest of `path`'s parents that exists and is not a folder (a report cannot be
    made below it), or None."""
    for parent in path.parents:
        try:
            mode = os.stat(parent).st_mode
        except FileNotFoundError:
            continue  # made by the check, as its folders are
        except NotADirectoryError:
            continue  # a file further up: found on a later turn
        return None if stat.S_ISDIR(mode) else parent
    return None


@dataclass
class Target:
    """One report path, checked and (for a regular file) locked until closed."""

    path: Path
    kind: str = "regular"
    _lock: IO[str] | None = field(default=None, repr=False)

    @property
    def real(self) -> Path:
        """Where the bytes go: a symlink's target, else the path itself."""
        return Path(os.path.realpath(self.path)) if self.path.is_symlink() else self.path

    def check(self) -> None:
        """Raise TargetError unless the path can be written as it will be at the end."""
        blocking = _file_above(self.path)
        if blocking is not None:
            raise TargetError(
                f"{str(self.path)!r} cannot be made: {str(blocking)!r} is a file, not a "
                "folder; give a path in a folder"
            )
        self.kind = _kind(self.path)
        if self.kind == "stream":
            if not os.access(self.path, os.W_OK):
                raise TargetError(f"{str(self.path)!r} is not writable")
            return
        if self.kind != "regular":
            raise TargetError(f"{str(self.path)!r} is {self.kind}; give a file path")
        folder = self.real.parent
        try:
            folder.mkdir(parents=True, exist_ok=True)
            fd, probe = tempfile.mkstemp(dir=folder, prefix=f".{self.real.name}.", suffix=".tmp")
            os.close(fd)
            os.unlink(probe)
        except OSError as exc:
            raise TargetError(
                f"cannot write in {str(folder)!r}: {exc.strerror or exc}; "
                "give a path in a folder you can write to"
            ) from None

    def lock(self) -> None:
        """Hold the target for this campaign; TargetError if another one holds it."""
        if self.kind != "regular":
            return
        lock_path = self.real.parent / f".{self.real.name}.lock"
        while True:
            handle = open(lock_path, "a+")  # noqa: SIM115  (held until close())
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.seek(0)
                holder = handle.read().strip() or "another process"
                handle.close()
                raise TargetError(
                    f"another killpoint campaign ({holder}) is writing {str(self.path)!r}; "
                    "wait for it, or give another path"
                ) from None
            # The race: a holder that closes unlinks the file while it holds it, but a
            # campaign that opened it just before gets the lock of a file no path names
            # any more, while a third one makes and locks a new file. The lock counts only
            # while the path still names the locked file; else that file is let go and
            # the path opened again.
            if _same_file(handle, lock_path):
                break
            handle.close()
        handle.seek(0)
        handle.truncate()
        handle.write(f"pid {os.getpid()}")
        handle.flush()
        self._lock = handle

    def close(self) -> None:
        if self._lock is not None:
            # Unlinked while still held, then let go: a campaign that opened it meanwhile
            # finds the path no longer names it (lock()) and opens the path again.
            with contextlib.suppress(OSError):
                os.unlink(self._lock.name)
            self._lock.close()
            self._lock = None

    def write(self, text: str) -> None:
        if self.kind == "stream":
            with open(self.path, "w", encoding="utf-8") as f:  # in place: never replaced
                f.write(text)
            return
        write_atomically(self.real, text)


def _same_file(handle: IO[str], path: Path) -> bool:
    held = os.fstat(handle.fileno())
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    return (held.st_dev, held.st_ino) == (named.st_dev, named.st_ino)


def write_atomically(path: Path, text: str) -> None:
    """The whole text or nothing: a temporary file beside `path`, renamed over it."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        # mkstemp makes the file private (0600); a report is meant to be shared.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def fallback_path(path: Path) -> Path:
    """Where a report goes when its own path cannot be written at the end."""
    return Path(tempfile.gettempdir()) / f"killpoint-{os.getpid()}-{path.name}"


def same_file(a: Path, b: Path) -> bool:
    return os.path.abspath(os.path.realpath(a)) == os.path.abspath(os.path.realpath(b))


__all__ = [
    "REPORTS",
    "Target",
    "TargetError",
    "default_paths",
    "fallback_path",
    "same_file",
    "write_atomically",
]
