"""The model of what a power cut leaves, one class per rule (docs/powerloss.md), driven
the way the passthrough drives it, without FUSE: these run everywhere."""

# ruff: noqa: SIM300

from __future__ import annotations

from pathlib import Path

from killpoint.powerloss import DURABLE, NOT_DURABLE, REPLACED, RESTORED, CutReport
from killpoint.powerloss.cut_models import CutModel, TornOp
from killpoint.powerloss.durable import DIR, DurableTree


class Live:
    """A folder in memory and its model, changed together as the passthrough does."""

    def __init__(self, tree: DurableTree | None = None) -> None:
        self.tree = tree or DurableTree()
        self.files: dict[str, bytearray] = {}

    def create(self, path: str) -> None:
        self.files[path] = bytearray()
        self.tree.created(path)

    def mkdir(self, path: str) -> None:
        self.tree.created(path, DIR)

    def write(self, path: str, offset: int, data: bytes) -> None:
        f = self.files[path]
        if offset > len(f):
            f.extend(bytes(offset - len(f)))
        f[offset : offset + len(data)] = data
        self.tree.wrote(self.tree.node(path), offset, data)

    def truncate(self, path: str, length: int) -> None:
        f = self.files[path]
        del f[length:]
        f.extend(bytes(length - len(f)))
        self.tree.resized(self.tree.node(path), length)

    def fsync(self, path: str) -> None:
        f = self.files[path]
        self.tree.synced(self.tree.node(path), len(f), lambda o, n: bytes(f[o : o + n]))

    def fsyncdir(self, path: str = "") -> None:
        self.tree.dir_synced(self.tree.node(path))

    def rename(self, old: str, new: str) -> None:
        self.files[new] = self.files.pop(old)
        self.tree.renamed(old, new)

    def unlink(self, path: str) -> None:
        del self.files[path]
        self.tree.removed(path)

    def cut(self, dest: Path, model: CutModel | None = None) -> tuple[dict[str, bytes], CutReport]:
        sizes = {path: len(data) for path, data in self.files.items()}
        report = self.tree.write_image(dest, sizes, model, lambda p: bytes(self.files[p]))
        image = {
            str(p.relative_to(dest)): p.read_bytes() for p in sorted(dest.rglob("*")) if p.is_file()
        }
        return image, report


class TestContentAtLastSync:
    def test_writes_after_the_last_fsync_are_lost(self, tmp_path: Path) -> None:
        """Rule 1: the image holds the content as of the last fsync, not the later writes."""
        live = Live()
        live.create("f")
        live.fsyncdir()
        live.write("f", 0, b"synced")
        live.fsync("f")
        live.write("f", 0, b"SYNCED-and-more")

        image, report = live.cut(tmp_path / "image")

        assert {"f": b"synced"} == image
        assert (DURABLE, 6, 15, 15) == (
            report.files["f"].entry,
            report.files["f"].synced_bytes,
            report.files["f"].lost_bytes,
            report.files["f"].live_bytes,
        )

    def test_a_file_never_synced_is_empty(self, tmp_path: Path) -> None:
        """Rule 1: a file whose entry is durable but whose content was never synced is empty."""
        live = Live()
        live.create("f")
        live.fsyncdir()
        live.write("f", 0, b"never synced")

        image, _ = live.cut(tmp_path / "image")

        assert {"f": b""} == image

    def test_a_sync_takes_only_what_changed(self, tmp_path: Path) -> None:
        """Rule 1: bytes written before an earlier sync stay as that sync left them."""
        live = Live()
        live.create("f")
        live.fsyncdir()
        live.write("f", 0, b"aaaa")
        live.fsync("f")
        live.write("f", 2, b"BB")
        live.fsync("f")
        live.write("f", 0, b"C")

        image, report = live.cut(tmp_path / "image")

        assert {"f": b"aaBB"} == image
        assert 1 == report.files["f"].lost_bytes
        assert 2 == report.files["f"].syncs


class TestDirectoryEntries:
    def test_a_creation_without_a_directory_sync_is_lost(self, tmp_path: Path) -> None:
        """Rule 2: a file synced but whose directory was not synced after its creation
        is not in the image."""
        live = Live()
        live.create("f")
        live.write("f", 0, b"data")
        live.fsync("f")

        image, report = live.cut(tmp_path / "image")

        assert {} == image
        assert (NOT_DURABLE, None, 4) == (
            report.files["f"].entry,
            report.files["f"].synced_bytes,
            report.files["f"].lost_bytes,
        )

    def test_an_unlink_without_a_directory_sync_is_undone(self, tmp_path: Path) -> None:
        """Rule 2: a removed file comes back, with its durable content."""
        live = Live()
        live.create("f")
        live.write("f", 0, b"data")
        live.fsync("f")
        live.fsyncdir()
        live.unlink("f")

        image, report = live.cut(tmp_path / "image")

        assert {"f": b"data"} == image
        assert RESTORED == report.files["f"].entry

    def test_an_unlink_followed_by_a_directory_sync_is_durable(self, tmp_path: Path) -> None:
        """Rule 2: once the directory is synced, the removal holds."""
        live = Live()
        live.create("f")
        live.fsyncdir()
        live.unlink("f")
        live.fsyncdir()

        image, report = live.cut(tmp_path / "image")

        assert ({}, {}) == (image, report.files)

    def test_a_rename_without_a_directory_sync_is_undone(self, tmp_path: Path) -> None:
        """Rule 2: the old name holds the file, the new name (and what it replaced) is as
        at the last directory sync."""
        live = Live()
        for name, content in (("new", b"new"), ("old", b"old")):
            live.create(name)
            live.write(name, 0, content)
            live.fsync(name)
        live.fsyncdir()
        live.rename("new", "old")

        image, report = live.cut(tmp_path / "image")

        assert {"new": b"new", "old": b"old"} == image
        assert {"new": RESTORED, "old": REPLACED} == {
            path: f.entry for path, f in report.files.items()
        }

    def test_a_rename_followed_by_a_directory_sync_is_durable(self, tmp_path: Path) -> None:
        """Rule 2: the atomic-replace idiom (write, fsync, rename, fsync the directory)."""
        live = Live()
        live.create("old")
        live.fsyncdir()
        live.create("tmp")
        live.write("tmp", 0, b"new content")
        live.fsync("tmp")
        live.rename("tmp", "old")
        live.fsyncdir()

        image, _ = live.cut(tmp_path / "image")

        assert {"old": b"new content"} == image

    def test_entries_of_a_new_directory_need_both_syncs(self, tmp_path: Path) -> None:
        """Rule 2: a file in a new directory survives when the directory's entry in its
        parent and the file's entry in the directory were both synced."""
        live = Live()
        live.mkdir("d")
        live.create("d/f")
        live.fsyncdir("d")
        half, _ = live.cut(tmp_path / "half")
        live.fsyncdir()
        whole, _ = live.cut(tmp_path / "whole")

        assert ({}, {"d/f": b""}) == (half, whole)

    def test_what_was_there_at_mount_is_durable(self, tmp_path: Path) -> None:
        """The backing folder's files at mount count as synced, entries and content."""
        backing = tmp_path / "backing"
        (backing / "d").mkdir(parents=True)
        (backing / "d" / "f").write_bytes(b"before")
        live = Live(DurableTree.from_folder(backing))
        live.files["d/f"] = bytearray(b"before")
        live.write("d/f", 0, b"AFTER!")

        image, _ = live.cut(tmp_path / "image")

        assert {"d/f": b"before"} == image


class TestSizeChanges:
    def test_a_truncation_is_durable_at_the_next_sync_only(self, tmp_path: Path) -> None:
        """Rule 3: a truncation not followed by a sync is undone."""
        live = Live()
        live.create("f")
        live.fsyncdir()
        live.write("f", 0, b"0123456789")
        live.fsync("f")
        live.truncate("f", 4)
        before_sync, report = live.cut(tmp_path / "before")
        live.fsync("f")
        after_sync, _ = live.cut(tmp_path / "after")

        assert {"f": b"0123456789"} == before_sync
        assert (10, 4) == (report.files["f"].synced_bytes, report.files["f"].live_bytes)
        assert {"f": b"0123"} == after_sync

    def test_shrink_then_grow_reads_zeros(self, tmp_path: Path) -> None:
        """Rule 3: bytes a file grows back after a truncation are zeros, not the old ones."""
        live = Live()
        live.create("f")
        live.fsyncdir()
        live.write("f", 0, b"abcdef")
        live.fsync("f")
        live.truncate("f", 2)
        live.truncate("f", 6)
        live.fsync("f")

        image, _ = live.cut(tmp_path / "image")

        assert {"f": b"ab\0\0\0\0"} == image


class TestNoReordering:
    def test_an_unsynced_write_never_lands_without_the_ones_before_it(self, tmp_path: Path) -> None:
        """Rule 4: a sync is a barrier; of the writes after it, none survive, so no later
        write is found in the image while an earlier one is missing."""
        live = Live()
        live.create("log")
        live.fsyncdir()
        live.write("log", 0, b"A")
        live.fsync("log")
        for n, byte in enumerate(b"BCDEF", start=1):
            live.write("log", n, bytes([byte]))

        image, _ = live.cut(tmp_path / "image")

        assert {"log": b"A"} == image


class TestTornWrite:
    def test_the_newest_unsynced_write_keeps_a_prefix(self, tmp_path: Path) -> None:
        """Rule 5 (torn-op at byte units): of each file's newest unsynced write, a prefix
        lands; the unsynced writes before it do not."""
        live = Live()
        live.create("f")
        live.fsyncdir()
        live.write("f", 0, b"base")
        live.fsync("f")
        live.write("f", 4, b"older")
        live.write("f", 9, b"newest")

        image, report = live.cut(tmp_path / "image", TornOp(unit=1, seed=0))

        torn = report.files["f"].torn_bytes
        assert 0 < torn < 6
        assert {"f": b"base\0\0\0\0\0" + b"newest"[:torn]} == image
        assert (9 + torn, 1, 1) == (
            report.files["f"].synced_bytes,
            report.files["f"].torn_ops,
            report.files["f"].dropped_ops,
        )

    def test_nothing_is_torn_after_a_sync(self, tmp_path: Path) -> None:
        """Rule 5: a synced write is whole; there is no newest unsynced write to tear."""
        live = Live()
        live.create("f")
        live.fsyncdir()
        live.write("f", 0, b"whole")
        live.fsync("f")

        image, report = live.cut(tmp_path / "image", TornOp(unit=1))

        assert ({"f": b"whole"}, 0) == (image, report.files["f"].torn_bytes)


class TestReport:
    def test_the_report_round_trips_through_json(self, tmp_path: Path) -> None:
        """A cell's evidence carries the report as JSON and reads it back unchanged."""
        live = Live()
        live.create("f")
        live.write("f", 0, b"x")
        _, report = live.cut(tmp_path / "image")

        assert report == CutReport.from_json(report.to_json())
        assert "f: not durable (synced None, lost 1, live 1; 0 syncs)" == report.summary()
