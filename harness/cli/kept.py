"""The cell folders a campaign kept, named at its end with their size and the command
that removes them: by default in /dev/shm, where they hold RAM until someone does (a
campaign that failed 156 cells left 19 MB there, and said nothing)."""

from __future__ import annotations

import os
import shlex
from collections.abc import Iterable
from pathlib import Path

from killpoint.engine.work_root import RAM_DIR
from killpoint.values.sentences import count


def size_of(folder: Path) -> int:
    """Bytes in the folder's files (links not followed; a file gone meanwhile counts 0)."""
    total = 0
    for top, _dirs, files in os.walk(folder):
        for name in files:
            try:
                total += os.lstat(os.path.join(top, name)).st_blocks * 512
            except OSError:
                continue
    return total


def shown_size(n: int) -> str:
    for unit, scale in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


def kept_note(kept: Iterable[str], *, postgresql: bool = False) -> str | None:
    """One line: how many cell folders, in which campaign folders, how much those hold,
    and the `rm -rf` that removes them. The size is the campaign folders' whole, as the
    command removes them whole: the baselines' and traces' folders are there too."""
    folders = [Path(k) for k in kept]
    if not folders:
        return None
    roots = sorted({str(f.parent) for f in folders})
    size = sum(size_of(Path(r)) for r in roots)
    where = " of RAM" if any(Path(r).is_relative_to(RAM_DIR) for r in roots) else ""
    command = "rm -rf " + " ".join(shlex.quote(r) for r in roots)
    schemas = (
        "; each folder's store.txt names its schema on the server and the statement that drops it"
        if postgresql
        else ""
    )
    holds, it = ("holds", "it") if len(roots) == 1 else ("hold", "them")
    return (
        f"kept {count(len(folders), 'cell folder')} in {', '.join(roots)}, which {holds} "
        f"{shown_size(size)}{where} with the baselines' folders; remove {it} with: "
        f"{command}{schemas}"
    )


__all__ = ["kept_note", "shown_size", "size_of"]
