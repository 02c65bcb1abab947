"""The model of what a power cut leaves: a live tree beside a durable one.

The passthrough filesystem tells this model every change it made to the backing folder
(a write, a truncation, a creation, a rename, a removal) and every sync. The model keeps
what the kernel shows (the live tree) and what would survive the power going now (the
durable tree), and writes the durable tree out at the cut. Its rules
(docs/powerloss.md, one test each in tests/harness/powerloss/test_durable.py):

1. A file's content is its content as of its last fsync or fdatasync; nothing written
   after it survives. A write through a handle opened with O_SYNC or O_DSYNC is synced
   as it is written.
2. A directory entry (a creation, a rename, a removal, a hard link) survives only if its
   directory was synced after it; until then the name is as it was at that directory's
   last sync. A rename between two directories is two entries, each durable with its own
   directory's sync.
3. A size change (truncation, extension) is content: durable at the file's next sync.
4. A sync is a barrier, and nothing is reordered across it: the image is the state of
   the last syncs, never a mix in which a later unsynced write landed and an earlier
   one did not.
5. Torn mode (optional): of each file's newest unsynced write, the first N bytes land.

Content is tracked by byte range, not by page: a sync makes the whole file durable, so
the durable content is the same byte string at any granularity; ranges are exact, never
invent data from a neighbouring write, and stay few for SQLite's page-sized writes. What
was on the backing folder at mount counts as durable (it was there before the run).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from killpoint.errors import KillpointError
from killpoint.powerloss.cut_report import (
    DURABLE,
    NOT_DURABLE,
    REPLACED,
    RESTORED,
    CutReport,
    FileReport,
)
from killpoint.powerloss.ranges import END, Ranges

FILE, DIR, SYMLINK = "file", "dir", "symlink"


class NotInTree(KillpointError, LookupError):
    """A path the model does not know: the backing folder was changed behind its back."""


@dataclass(eq=False)
class Node:
    """A file, directory or symlink: one identity however often it is renamed.

    `data` is a file's durable content (a symlink's target); `dirty` the ranges changed
    since the last sync; `entries` a directory's live names, `durable_entries` its names
    as of its last sync."""

    kind: str
    data: bytearray = field(default_factory=bytearray)
    dirty: Ranges = field(default_factory=Ranges)
    last_write: tuple[int, bytes] | None = None  # the newest unsynced write (torn mode)
    syncs: int = 0
    entries: dict[str, Node] = field(default_factory=dict)
    durable_entries: dict[str, Node] = field(default_factory=dict)


def _parts(path: str) -> list[str]:
    return [p for p in path.split("/") if p]


class DurableTree:
    """The live and durable trees of one mounted folder (paths are relative to it)."""

    def __init__(self) -> None:
        self.root = Node(DIR)

    # -- the backing folder as it was at mount: durable as it stands ----------------------

    @classmethod
    def from_folder(cls, folder: Path) -> DurableTree:
        tree = cls()
        tree._adopt(tree.root, folder)
        return tree

    def _adopt(self, node: Node, folder: Path) -> None:
        with os.scandir(folder) as it:
            for entry in it:
                if entry.is_symlink():
                    child = Node(SYMLINK, bytearray(os.fsencode(os.readlink(entry.path))))
                elif entry.is_dir():
                    child = Node(DIR)
                    self._adopt(child, Path(entry.path))
                else:
                    child = Node(FILE, bytearray(Path(entry.path).read_bytes()))
                node.entries[entry.name] = child
        node.durable_entries = dict(node.entries)

    # -- lookups --------------------------------------------------------------------------

    def node(self, path: str) -> Node:
        node = self.root
        for part in _parts(path):
            try:
                node = node.entries[part]
            except KeyError:
                raise NotInTree(
                    f"killpoint: {path!r} is not in the power-loss model; was the backing "
                    "folder changed other than through the mount?"
                ) from None
        return node

    def _parent(self, path: str) -> tuple[Node, str]:
        parts = _parts(path)
        if not parts:
            raise NotInTree("killpoint: the root of the mount has no parent entry")
        return self.node("/".join(parts[:-1])), parts[-1]

    # -- the namespace --------------------------------------------------------------------

    def created(self, path: str, kind: str = FILE, target: bytes = b"") -> Node:
        """A new file, directory or symlink (a symlink's target is part of its creation)."""
        parent, name = self._parent(path)
        node = Node(kind, bytearray(target))
        parent.entries[name] = node
        return node

    def removed(self, path: str) -> None:
        """An unlink or rmdir: the node lives on in durable entries and open handles."""
        parent, name = self._parent(path)
        parent.entries.pop(name, None)

    def renamed(self, old: str, new: str) -> None:
        old_parent, old_name = self._parent(old)
        new_parent, new_name = self._parent(new)
        node = old_parent.entries.pop(old_name)
        new_parent.entries[new_name] = node

    def linked(self, existing: str, new: str) -> None:
        parent, name = self._parent(new)
        parent.entries[name] = self.node(existing)

    def dir_synced(self, node: Node) -> None:
        """fsync of a directory: its names, as they are now, are durable."""
        node.durable_entries = dict(node.entries)
        node.syncs += 1

    # -- content --------------------------------------------------------------------------

    def wrote(self, node: Node, offset: int, data: bytes) -> None:
        node.dirty.add(offset, offset + len(data))
        node.last_write = (offset, data)

    def changed(self, node: Node, start: int, end: int) -> None:
        """Bytes changed other than by a write (an allocation that may extend the file)."""
        node.dirty.add(start, end)

    def resized(self, node: Node, length: int) -> None:
        """A truncation or extension to `length`. Every byte from `length` on changed:
        bytes the file had there are gone, and bytes it grows back read as zeros. The
        region an extension adds below `length` is either beyond the durable content
        (zeros at the sync) or was cut by an earlier truncation, already marked."""
        node.dirty.add(length, END)
        node.last_write = None  # the newest write may no longer exist as written

    def synced(self, node: Node, size: int, read: Callable[[int, int], bytes]) -> None:
        """fsync or fdatasync of a file of `size` bytes; `read(offset, n)` reads its live
        content. Only what changed since the last sync is read."""
        data = node.data
        if len(data) > size:
            del data[size:]
        elif len(data) < size:
            data.extend(bytes(size - len(data)))
        for start, end in node.dirty.clipped(size):
            chunk = read(start, end - start)
            data[start : start + len(chunk)] = chunk
        node.dirty.clear()
        node.last_write = None
        node.syncs += 1

    # -- the cut --------------------------------------------------------------------------

    def write_image(
        self, dest: Path, live_sizes: dict[str, int], tear: int | None = None
    ) -> CutReport:
        """Write the durable tree into `dest` (made here; must not exist) and say what
        each file kept. `live_sizes`: the live files' sizes, by path (the backing's)."""
        dest.mkdir(parents=False)
        torn: dict[int, int] = {}
        skipped: list[str] = []
        image_nodes: dict[str, tuple[Node, int]] = {}  # path -> (file, bytes written)
        self._write_dir(self.root, dest, "", tear, torn, skipped, image_nodes, [self.root])
        live_nodes = dict(_files(self.root, "", live=True))
        files: dict[str, FileReport] = {}
        for path in sorted(set(live_nodes) | set(image_nodes)):
            live = live_nodes.get(path)
            kept, image_size = image_nodes.get(path, (None, None))
            live_size = live_sizes.get(path) if live is not None else None
            if kept is None:
                entry, lost = NOT_DURABLE, live_size or 0
            elif live is None:
                entry, lost = RESTORED, 0
            elif live is not kept:
                entry, lost = REPLACED, live_size or 0
            else:
                entry, lost = DURABLE, kept.dirty.total(live_size or 0)
            files[path] = FileReport(
                path=path,
                entry=entry,
                live_bytes=live_size,
                synced_bytes=image_size,
                lost_bytes=lost,
                syncs=(kept or live).syncs,  # type: ignore[union-attr]
                torn_bytes=torn.get(id(kept), 0) if kept is not None else 0,
            )
        return CutReport(dest, tear, files, tuple(skipped))

    def _write_dir(
        self,
        node: Node,
        folder: Path,
        rel: str,
        tear: int | None,
        torn: dict[int, int],
        skipped: list[str],
        image_nodes: dict[str, tuple[Node, int]],
        stack: list[Node],
    ) -> None:
        for name, child in sorted(node.durable_entries.items()):
            path = f"{rel}{name}"
            target = folder / name
            if child.kind == DIR:
                # Renames synced in one directory and not in the other can make a
                # directory its own durable ancestor; a real filesystem would not
                # mount such a tree either, so it is left out and named.
                if any(child is s for s in stack):
                    skipped.append(path)
                    continue
                target.mkdir()
                self._write_dir(
                    child, target, f"{path}/", tear, torn, skipped, image_nodes, [*stack, child]
                )
            elif child.kind == SYMLINK:
                os.symlink(bytes(child.data), target)
            else:
                content = child.data
                if tear is not None and child.last_write is not None:
                    offset, written = child.last_write
                    kept = written[:tear]
                    content = bytearray(content)
                    if offset > len(content):
                        content.extend(bytes(offset - len(content)))
                    content[offset : offset + len(kept)] = kept
                    torn[id(child)] = len(kept)
                target.write_bytes(content)
                image_nodes[path] = (child, len(content))


def _files(node: Node, rel: str, live: bool) -> Iterator[tuple[str, Node]]:
    for name, child in sorted((node.entries if live else node.durable_entries).items()):
        if child.kind == DIR:
            yield from _files(child, f"{rel}{name}/", live)
        elif child.kind == FILE:
            yield f"{rel}{name}", child
