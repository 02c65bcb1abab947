"""A corpus's files read and copied as data: plain files only, each within a size, each
state within a size, every limit checked before a byte is read or copied.

A corpus is a folder someone else may have made (a CI artefact, a pull request), so a
file in it may be anything a folder can hold: a symbolic link to /etc or to a secret
(followed, its target would be copied into the work folder and read), a FIFO or a
device (a read that never ends, or never starts), a file of gigabytes (the work folder
is RAM by default). Each path under the corpus is taken component by component without
following a link, and a state's folder is surveyed whole (every entry, its kind and
size) before any of it is read; a file is then opened with O_NOFOLLOW and O_NONBLOCK and
checked on the descriptor that is read to be a plain file within its limit. A read or a
copy counts the bytes it takes against the limit too (a file that grows meanwhile is
cut off), and a copy stops at `stop` (Ctrl-C).

`killpoint corpus record` holds what it keeps to the same limits, so a corpus it wrote
is never one it refuses.
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from killpoint.errors import CorpusError, Interrupted

MIB = 1024 * 1024
FILE_BYTES = 64 * MIB  # one file of a state (a store, a ledger, a model file)
STATE_BYTES = 256 * MIB  # a state's files together
STATE_FILES = 10_000  # files and folders under one state
CHUNK = MIB
# A recorded state's size, for scale: the research scenario's are 13 to 48 KB.
LIMITS_HINT = "a recorded state is kilobytes; this is not a corpus `killpoint corpus record` wrote"


def _shown(path: Path) -> str:
    return repr(str(path))


def _size(n: int) -> str:
    return f"{n / MIB:.1f} MiB" if n >= MIB else f"{n} bytes"


def inside(root: Path, *parts: str) -> Path:
    """`root/parts...`, each part below `root` checked not to be a symbolic link (the
    corpus folder itself is the user's to give, a link or not); the path, which may not
    exist (the caller's read says so)."""
    path = root
    for part in parts:
        if part in ("", ".", "..") or "/" in part:
            raise CorpusError(f"killpoint: {_shown(root)}: {part!r} is not a name inside it")
        path = path / part
        try:
            st = os.lstat(path)
        except FileNotFoundError:
            return root.joinpath(*parts)
        except OSError as exc:
            raise CorpusError(f"killpoint: cannot read {_shown(path)}: {exc.strerror}") from None
        if stat.S_ISLNK(st.st_mode):
            raise _link(path)
    return path


def _link(path: Path) -> CorpusError:
    return CorpusError(
        f"killpoint: {_shown(path)} is a symbolic link; a corpus holds plain files and "
        "folders only (a link could lead out of it), and killpoint follows none"
    )


def _not_plain(path: Path) -> CorpusError:
    return CorpusError(
        f"killpoint: {_shown(path)} is not a plain file (a device, a pipe or a socket); a "
        "corpus holds plain files only"
    )


def _too_big(path: Path, size: int, limit: int) -> CorpusError:
    return CorpusError(
        f"killpoint: {_shown(path)} holds {_size(size)}, over the {_size(limit)} a corpus "
        f"file may hold; {LIMITS_HINT}"
    )


def survey(folder: Path) -> dict[str, int]:
    """Every file under a state's folder (its path relative to the folder -> its size),
    walked without following links: CorpusError for a link, anything but a plain file or
    folder, a file over FILE_BYTES, or a state over STATE_BYTES or STATE_FILES, before
    anything is read."""
    try:
        top = os.lstat(folder)
    except FileNotFoundError:
        raise CorpusError(f"killpoint: state folder {_shown(folder)} is missing") from None
    if stat.S_ISLNK(top.st_mode):
        raise _link(folder)
    if not stat.S_ISDIR(top.st_mode):
        raise CorpusError(f"killpoint: {_shown(folder)} is not a folder")
    found: dict[str, int] = {}
    total = entries = 0
    stack = [folder]
    while stack:
        here = stack.pop()
        try:
            listing = list(os.scandir(here))
        except OSError as exc:
            raise CorpusError(f"killpoint: cannot list {_shown(here)}: {exc.strerror}") from None
        for entry in listing:
            path = Path(entry.path)
            entries += 1
            if entries > STATE_FILES:
                raise CorpusError(
                    f"killpoint: state folder {_shown(folder)} holds more than {STATE_FILES} "
                    f"files; {LIMITS_HINT}"
                )
            if entry.is_symlink():
                raise _link(path)
            if entry.is_dir(follow_symlinks=False):
                stack.append(path)
                continue
            if not entry.is_file(follow_symlinks=False):
                raise _not_plain(path)
            size = entry.stat(follow_symlinks=False).st_size
            if size > FILE_BYTES:
                raise _too_big(path, size, FILE_BYTES)
            total += size
            if total > STATE_BYTES:
                raise CorpusError(
                    f"killpoint: state folder {_shown(folder)} holds more than "
                    f"{_size(STATE_BYTES)}, the most a corpus state may hold; {LIMITS_HINT}"
                )
            found[str(path.relative_to(folder))] = size
    return found


def open_plain(path: Path, limit: int = FILE_BYTES) -> BinaryIO:
    """`path` opened for reading: CorpusError unless it is a plain file (not a link,
    checked on the descriptor that is read) of at most `limit` bytes."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise
    except OSError as exc:
        if os.path.islink(path):
            raise _link(path) from None
        raise CorpusError(f"killpoint: cannot read {_shown(path)}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise _not_plain(path)
        if st.st_size > limit:
            raise _too_big(path, st.st_size, limit)
    except BaseException:
        os.close(fd)
        raise
    return os.fdopen(fd, "rb")


def read_bytes(path: Path, limit: int = FILE_BYTES) -> bytes:
    """A plain file's bytes, at most `limit` of them (one that grew past it is refused)."""
    with open_plain(path, limit) as f:
        data = f.read(limit + 1)
    if len(data) > limit:
        raise _too_big(path, len(data), limit)
    return data


def read_lines(path: Path, limit: int = FILE_BYTES) -> Iterator[tuple[int, bytes]]:
    """A plain file's lines (numbered from 1, without their end), within `limit` bytes."""
    read = 0
    with open_plain(path, limit) as f:
        for number, raw in enumerate(f, start=1):
            read += len(raw)
            if read > limit:
                raise _too_big(path, read, limit)
            yield number, raw.rstrip(b"\r\n")


def _check_stop(stop: threading.Event | None) -> None:
    if stop is not None and stop.is_set():
        raise Interrupted()


def copy_file(
    source: Path, dest: Path, limit: int = FILE_BYTES, stop: threading.Event | None = None
) -> int:
    """Copy a plain file, at most `limit` bytes, a chunk at a time (Interrupted once `stop`
    is set); the bytes copied. A copy cut short leaves no file at `dest`."""
    written = 0
    with open_plain(source, limit) as src:
        try:
            with open(dest, "wb") as out:
                while chunk := src.read(CHUNK):
                    written += len(chunk)
                    if written > limit:
                        raise _too_big(source, written, limit)
                    _check_stop(stop)
                    out.write(chunk)
        except BaseException:
            dest.unlink(missing_ok=True)
            raise
    return written


def copy_tree(
    source: Path,
    dest: Path,
    limit: int = STATE_BYTES,
    stop: threading.Event | None = None,
) -> int:
    """Copy a folder of plain files (surveyed first: no link, nothing but files and
    folders, each file and the whole within their limits); the bytes copied."""
    files = survey(source)
    total = sum(files.values())
    if total > limit:
        raise CorpusError(
            f"killpoint: {_shown(source)} holds {_size(total)}, over the {_size(limit)} "
            f"allowed; {LIMITS_HINT}"
        )
    copied = 0
    dest.mkdir(parents=True, exist_ok=True)
    for rel in sorted(files):
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        copied += copy_file(source / rel, target, FILE_BYTES, stop)
    return copied


__all__ = [
    "FILE_BYTES",
    "STATE_BYTES",
    "STATE_FILES",
    "copy_file",
    "copy_tree",
    "inside",
    "open_plain",
    "read_bytes",
    "read_lines",
    "survey",
]
