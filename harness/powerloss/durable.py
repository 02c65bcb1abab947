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
5. Cut models (cut_models.py): the operations made since the last syncs are kept as a
   log (each write with its bytes, each truncation, allocation and entry change), and a
   model chooses which of them reach the image on top of the durable state: none
   (`synced`, rule 4 above), a torn last write, a subset, per-file and per-directory
   prefixes. The log of a file is dropped at its sync, of a directory at its sync.

Content is tracked by byte range, not by page: a sync makes the whole file durable, so
the durable content is the same byte string at any granularity; ranges are exact, never
invent data from a neighbouring write, and stay few for SQLite's page-sized writes. What
was on the backing folder at mount counts as durable (it was there before the run).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from itertools import count
from pathlib import Path

from killpoint.errors import NotInTree
from killpoint.powerloss.cut_models import (
    ALLOCATE,
    TRUNCATE,
    WRITE,
    Choice,
    CutModel,
    Op,
    Synced,
)
from killpoint.powerloss.cut_report import (
    DROPPED,
    DURABLE,
    KEPT,
    NOT_DURABLE,
    REPLACED,
    RESTORED,
    TORN,
    CutReport,
    FileReport,
    OpReport,
)
from killpoint.powerloss.ranges import END, Ranges

FILE, DIR, SYMLINK = "file", "dir", "symlink"


@dataclass(eq=False)
class Node:
    """A file, directory or symlink: one identity however often it is renamed.

    `data` is a file's durable content (a symlink's target); `dirty` the ranges changed
    since the last sync; `pending` the seqs of its logged operations since then (a
    file's content operations, a directory's entry changes); `entries` a directory's
    live names, `durable_entries` its names as of its last sync."""

    kind: str
    serial: int = 0
    data: bytearray = field(default_factory=bytearray)
    dirty: Ranges = field(default_factory=Ranges)
    pending: list[int] = field(default_factory=list)
    syncs: int = 0
    entries: dict[str, Node] = field(default_factory=dict)
    durable_entries: dict[str, Node] = field(default_factory=dict)


@dataclass(frozen=True, eq=False)
class Logged:
    """An unsynced operation with what it takes to apply it: the node it changed, a
    write's bytes, an entry change's names (a name -> its node; None: removed)."""

    op: Op
    node: Node
    data: bytes = b""
    changes: tuple[tuple[str, Node | None], ...] = ()


def _parts(path: str) -> list[str]:
    return [p for p in path.split("/") if p]


class DurableTree:
    """The live and durable trees of one mounted folder (paths are relative to it)."""

    def __init__(self) -> None:
        self._serials = count(1)
        self._seqs = count(1)
        self.root = self.new_node(DIR)
        self.log: dict[int, Logged] = {}  # every unsynced operation, by seq (in order)

    def new_node(self, kind: str, data: bytes = b"") -> Node:
        return Node(kind, next(self._serials), bytearray(data))

    def _record(
        self,
        kind: str,
        node: Node,
        *,
        offset: int = 0,
        length: int = 0,
        name: str = "",
        source: str = "",
        data: bytes = b"",
        changes: tuple[tuple[str, Node | None], ...] = (),
    ) -> None:
        seq = next(self._seqs)
        op = Op(seq, kind, node.serial, offset, length, name, source)
        self.log[seq] = Logged(op, node, data, changes)
        node.pending.append(seq)

    def _settled(self, node: Node) -> None:
        """A sync made the node's logged operations durable: out of the log."""
        for seq in node.pending:
            self.log.pop(seq, None)
        node.pending.clear()

    # -- the backing folder as it was at mount: durable as it stands ----------------------

    @classmethod
    def from_folder(cls, folder: Path) -> DurableTree:
        tree = cls()
        tree._adopt(tree.root, folder)
        return tree

    def _adopt(self, node: Node, folder: Path) -> None:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)  # serials in a stable order
        for entry in entries:
            if entry.is_symlink():
                child = self.new_node(SYMLINK, os.fsencode(os.readlink(entry.path)))
            elif entry.is_dir():
                child = self.new_node(DIR)
                self._adopt(child, Path(entry.path))
            else:
                child = self.new_node(FILE, Path(entry.path).read_bytes())
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
        node = self.new_node(kind, target)
        parent.entries[name] = node
        op = {DIR: "mkdir", SYMLINK: "symlink"}.get(kind, "create")
        self._record(op, parent, name=name, changes=((name, node),))
        return node

    def removed(self, path: str) -> None:
        """An unlink or rmdir: the node lives on in durable entries and open handles."""
        parent, name = self._parent(path)
        node = parent.entries.pop(name, None)
        if node is not None:
            op = "rmdir" if node.kind == DIR else "unlink"
            self._record(op, parent, name=name, changes=((name, None),))

    def renamed(self, old: str, new: str) -> None:
        old_parent, old_name = self._parent(old)
        new_parent, new_name = self._parent(new)
        node = old_parent.entries.pop(old_name)
        new_parent.entries[new_name] = node
        if old_parent is new_parent:  # one entry change: rename(2) within a directory
            changes: tuple[tuple[str, Node | None], ...] = ((old_name, None), (new_name, node))
            self._record("rename", new_parent, name=new_name, source=old_name, changes=changes)
        else:  # two, one per directory, each durable with its own directory's sync
            self._record("rename", old_parent, name=old_name, changes=((old_name, None),))
            self._record(
                "rename", new_parent, name=new_name, source=old, changes=((new_name, node),)
            )

    def linked(self, existing: str, new: str) -> None:
        parent, name = self._parent(new)
        node = self.node(existing)
        parent.entries[name] = node
        self._record("link", parent, name=name, source=existing, changes=((name, node),))

    def dir_synced(self, node: Node) -> None:
        """fsync of a directory: its names, as they are now, are durable."""
        node.durable_entries = dict(node.entries)
        node.syncs += 1
        self._settled(node)

    # -- content --------------------------------------------------------------------------

    def wrote(self, node: Node, offset: int, data: bytes) -> None:
        node.dirty.add(offset, offset + len(data))
        self._record(WRITE, node, offset=offset, length=len(data), data=bytes(data))

    def changed(self, node: Node, start: int, end: int) -> None:
        """Bytes changed other than by a write (an allocation that may extend the file)."""
        node.dirty.add(start, end)
        self._record(ALLOCATE, node, offset=start, length=end - start)

    def resized(self, node: Node, length: int) -> None:
        """A truncation or extension to `length`. Every byte from `length` on changed:
        bytes the file had there are gone, and bytes it grows back read as zeros. The
        region an extension adds below `length` is either beyond the durable content
        (zeros at the sync) or was cut by an earlier truncation, already marked."""
        node.dirty.add(length, END)
        self._record(TRUNCATE, node, length=length)

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
        node.syncs += 1
        self._settled(node)

    # -- the cut --------------------------------------------------------------------------

    def write_image(
        self,
        dest: Path,
        live_sizes: dict[str, int],
        model: CutModel | None = None,
        read_live: Callable[[str], bytes] | None = None,
    ) -> CutReport:
        """Write the image into `dest` (made here; must not exist): the durable tree, plus
        what `model` keeps of the unsynced operations (default: nothing), and say what
        each file and each operation kept. `live_sizes`: the live files' sizes, by path
        (the backing's); `read_live(path)`: a live file's bytes, to count exactly what a
        file that kept unsynced operations lost (without it: its bytes changed since its
        last sync)."""
        cut_by: CutModel = model or Synced()
        logged = [self.log[seq] for seq in sorted(self.log)]
        choice = cut_by.choose([e.op for e in logged])
        applied: dict[int, list[tuple[Logged, int | None]]] = {}  # node id -> (op, torn n)
        for e in logged:
            seq = e.op.seq
            if seq in choice.kept or seq in choice.torn:
                applied.setdefault(id(e.node), []).append((e, choice.torn.get(seq)))
        image = _Image(applied)
        dest.mkdir(parents=False)
        image.write_dir(self.root, dest, "", [self.root])
        live_nodes = dict(_files(self.root, "", live=True))
        files: dict[str, FileReport] = {}
        fates = _fates(logged, choice, image, self.root)
        for path in sorted(set(live_nodes) | set(image.files)):
            live = live_nodes.get(path)
            kept, image_size = image.files.get(path, (None, None))
            live_size = live_sizes.get(path) if live is not None else None
            if kept is None:
                entry, lost = NOT_DURABLE, live_size or 0
            elif live is None:
                entry, lost = RESTORED, 0
            elif live is not kept:
                entry, lost = REPLACED, live_size or 0
            elif id(kept) in applied and read_live is not None:
                entry, lost = DURABLE, _differing(image.content[id(kept)], read_live(path))
            else:
                entry, lost = DURABLE, kept.dirty.total(live_size or 0)
            node = kept or live
            assert node is not None
            ops = [fates[seq] for seq in node.pending if seq in fates]
            files[path] = FileReport(
                path=path,
                entry=entry,
                live_bytes=live_size,
                synced_bytes=image_size,
                lost_bytes=lost,
                syncs=node.syncs,
                torn_bytes=sum(o.kept for o in ops if o.fate == TORN),
                kept_ops=sum(o.fate == KEPT for o in ops),
                torn_ops=sum(o.fate == TORN for o in ops),
                dropped_ops=sum(o.fate == DROPPED for o in ops),
            )
        paths: dict[int, str | None] = {}
        return CutReport(
            dest,
            cut_by.to_json(),
            files,
            tuple(image.skipped),
            tuple(_named(fates[e.op.seq], e, self, image, paths) for e in logged),
        )


class _Image:
    """The image being written: each directory's entries and each file's content as the
    durable state plus the kept operations, applied in their order."""

    def __init__(self, applied: dict[int, list[tuple[Logged, int | None]]]) -> None:
        self.applied = applied
        self.files: dict[str, tuple[Node, int]] = {}  # path -> (file, bytes written)
        self.paths: dict[int, str] = {}  # node id -> its path in the image
        self.content: dict[int, bytes] = {}  # node id -> its content in the image
        self.skipped: list[str] = []

    def entries(self, node: Node) -> dict[str, Node]:
        entries = dict(node.durable_entries)
        for logged, _ in self.applied.get(id(node), ()):
            for name, child in logged.changes:
                if child is None:
                    entries.pop(name, None)
                else:
                    entries[name] = child
        return entries

    def data(self, node: Node) -> bytearray:
        data = bytearray(node.data)
        for logged, torn in self.applied.get(id(node), ()):
            op = logged.op
            if op.kind == WRITE:
                written = logged.data if torn is None else logged.data[:torn]
                if op.offset > len(data):
                    data.extend(bytes(op.offset - len(data)))
                data[op.offset : op.offset + len(written)] = written
            elif op.kind == TRUNCATE:
                del data[op.length :]
                data.extend(bytes(op.length - len(data)))
            elif op.kind == ALLOCATE and op.offset + op.length > len(data):
                data.extend(bytes(op.offset + op.length - len(data)))
        return data

    def write_dir(self, node: Node, folder: Path, rel: str, stack: list[Node]) -> None:
        for name, child in sorted(self.entries(node).items()):
            path = f"{rel}{name}"
            target = folder / name
            if child.kind == DIR:
                # Renames synced in one directory and not in the other can make a
                # directory its own durable ancestor; a real filesystem would not
                # mount such a tree either, so it is left out and named.
                if any(child is s for s in stack):
                    self.skipped.append(path)
                    continue
                target.mkdir()
                self.paths.setdefault(id(child), path)
                self.write_dir(child, target, f"{path}/", [*stack, child])
            elif child.kind == SYMLINK:
                os.symlink(bytes(child.data), target)
            else:
                content = self.data(child)
                target.write_bytes(content)
                self.files[path] = (child, len(content))
                self.paths.setdefault(id(child), path)
                if id(child) in self.applied:
                    self.content[id(child)] = bytes(content)


def _differing(image: bytes, live: bytes) -> int:
    """How many bytes of `live` the image does not hold as they are."""
    common = min(len(image), len(live))
    differing = len(live) - common
    for start in range(0, common, 4096):  # page by page: most pages are equal, and cheap so
        end = min(start + 4096, common)
        a, b = image[start:end], live[start:end]
        if a != b:
            differing += sum(x != y for x, y in zip(a, b, strict=True))
    return differing


def _fates(logged: list[Logged], choice: Choice, image: _Image, root: Node) -> dict[int, OpReport]:
    """Each operation's fate: kept, torn (n bytes) or dropped. An operation on a file or a
    directory that is not in the image reached nothing, whatever the model chose: dropped."""
    fates: dict[int, OpReport] = {}
    for entry in logged:
        op = entry.op
        in_image = id(entry.node) in image.paths or entry.node is root
        if op.seq in choice.torn and in_image:
            fate, kept = TORN, choice.torn[op.seq]
        elif op.seq in choice.kept and in_image:
            fate, kept = KEPT, op.length if op.kind == WRITE else 0
        else:
            fate, kept = DROPPED, 0
        fates[op.seq] = OpReport(op.seq, op.kind, "", op.offset, op.length, fate, kept)
    return fates


def _named(
    report: OpReport,
    logged: Logged,
    tree: DurableTree,
    image: _Image,
    paths: dict[int, str | None],
) -> OpReport:
    """The report of one operation with its path: where its file is in the image, else
    live, else at its directory's last sync; an entry change by its directory's path.
    `paths` caches the look-ups of nodes not in the image."""
    node = logged.node
    where = image.paths.get(id(node))
    if where is None and node is not tree.root:
        if id(node) not in paths:
            paths[id(node)] = (
                _path_in(tree.root, node, live=True)
                or _path_in(tree.root, node, live=False)
                or _last_name(tree, node)
            )
        where = paths[id(node)]
    if logged.op.content:
        path = where if where is not None else "(unlinked)"
    else:
        folder = "" if node is tree.root else f"{where or '(unlinked)'}/"
        path = f"{folder}{logged.op.name}"
        if logged.op.source:
            path = f"{logged.op.source} -> {path}"
    return OpReport(
        report.seq, report.op, path, report.offset, report.length, report.fate, report.kept
    )


def _last_name(tree: DurableTree, node: Node) -> str | None:
    """A node no name holds any more (created, then unlinked, neither synced): the last
    name an entry change gave it, marked so."""
    for seq in sorted(tree.log, reverse=True):
        logged = tree.log[seq]
        for name, child in logged.changes:
            if child is node:
                folder = logged.node
                where = "" if folder is tree.root else _path_in(tree.root, folder, live=True)
                return f"{where}/{name} (unlinked)" if where else f"{name} (unlinked)"
    return None


def _path_in(root: Node, node: Node, live: bool) -> str | None:
    """The first path of `node` under `root` (live or durable names), or None."""
    todo: list[tuple[Node, str]] = [(root, "")]
    seen: set[int] = set()
    while todo:
        folder, rel = todo.pop()
        if id(folder) in seen:
            continue
        seen.add(id(folder))
        for name, child in sorted((folder.entries if live else folder.durable_entries).items()):
            if child is node:
                return f"{rel}{name}"
            if child.kind == DIR:
                todo.append((child, f"{rel}{name}/"))
    return None


def _files(node: Node, rel: str, live: bool) -> Iterator[tuple[str, Node]]:
    for name, child in sorted((node.entries if live else node.durable_entries).items()):
        if child.kind == DIR:
            yield from _files(child, f"{rel}{name}/", live)
        elif child.kind == FILE:
            yield f"{rel}{name}", child
