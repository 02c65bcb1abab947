"""Each cut model through the kernel: known bytes written on a real mount, cut with the
model and a seed, and the image's bytes checked against the rule and against what the
cut's report says it kept, tore and dropped (docs/powerloss.md, "Cut models")."""

# ruff: noqa: SIM300

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from killpoint.powerloss import CutReport, PowerLossFS
from killpoint.powerloss.cut_models import CutModel, Reorder, Synced, TornOp, TornSeq
from killpoint.powerloss.cut_report import DROPPED, KEPT, TORN
from tests.harness.powerloss.conftest import sync_dir, write

SEEDS = range(6)


def image_of(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def cut(
    cell: Path, name: str, model: CutModel, work: Callable[[Path], None]
) -> tuple[dict[str, bytes], CutReport]:
    """Mount, do `work` in the mount, cut with `model`: the image and the report."""
    with PowerLossFS(cell / f"{name}-backing", cell / name) as fs:
        work(fs.mountpoint)
        report = fs.cut(model=model)
        fs.unmount()
    return image_of(cell / name), report


def writes_of(report: CutReport, path: str) -> list[tuple[int, int, str, int]]:
    """(offset, length, fate, bytes kept) of each write of `path` the report lists."""
    return [
        (o.offset, o.length, o.fate, o.kept)
        for o in report.ops
        if o.op == "write" and o.path == path
    ]


DURABLE = b"d" * 8192


def base(folder: Path) -> None:
    """A file `f` of 8 KiB of `d`, synced, with its entry synced."""
    write(folder / "f", DURABLE, sync=True)
    sync_dir(folder)


class TestSynced:
    def test_every_unsynced_write_is_dropped_and_listed(self, cell: Path) -> None:
        def work(m: Path) -> None:
            base(m)
            write(m / "f", b"A" * 100, offset=0)
            write(m / "f", b"B" * 100, offset=100)

        image, report = cut(cell, "m", Synced(), work)

        assert {"f": DURABLE} == image
        assert [(0, 100, DROPPED, 0), (100, 100, DROPPED, 0)] == writes_of(report, "f")


class TestTornOp:
    def test_the_last_write_is_torn_on_a_sector_boundary(self, cell: Path) -> None:
        """The earlier unsynced write is dropped; the last keeps [1000, p) with p a
        multiple of 512 inside it; the rest of the file is as synced."""

        def work(m: Path) -> None:
            base(m)
            write(m / "f", b"A" * 1000, offset=0)
            write(m / "f", b"B" * 3000, offset=1000)

        ends = set()
        for seed in SEEDS:
            image, report = cut(cell, f"s{seed}", TornOp(seed=seed), work)
            [first, last] = writes_of(report, "f")
            p = 1000 + last[3]
            assert (0, 1000, DROPPED, 0) == first
            assert (1000, 3000, TORN) == last[:3]
            assert 0 == p % 512 and 1000 < p < 4000
            assert {"f": b"d" * 1000 + b"B" * (p - 1000) + b"d" * (8192 - p)} == image
            assert last[3] == report.files["f"].torn_bytes
            ends.add(p)

        assert len(ends) > 1, ends  # the seed moves the tear

    def test_the_last_write_is_torn_at_a_byte(self, cell: Path) -> None:
        def work(m: Path) -> None:
            base(m)
            write(m / "f", b"C" * 7, offset=3)

        ends = set()
        for seed in SEEDS:
            image, report = cut(cell, f"s{seed}", TornOp(unit=1, seed=seed), work)
            [(_, _, fate, kept)] = writes_of(report, "f")
            assert TORN == fate and 0 < kept < 7
            assert {"f": b"ddd" + b"C" * kept + DURABLE[3 + kept :]} == image
            ends.add(kept)

        assert len(ends) > 1, ends

    def test_a_write_inside_one_sector_is_not_torn(self, cell: Path) -> None:
        def work(m: Path) -> None:
            base(m)
            write(m / "f", b"E" * 500, offset=512)

        image, report = cut(cell, "m", TornOp(seed=0), work)

        assert ({"f": DURABLE}, [(512, 500, DROPPED, 0)]) == (image, writes_of(report, "f"))


class TestTornSeq:
    def test_a_seeded_subset_of_the_writes_lands(self, cell: Path) -> None:
        """Eight one-byte writes: the image holds exactly the ones the report says were
        kept; the seeds keep different subsets, some a later write without an earlier."""
        letters = b"ABCDEFGH"

        def work(m: Path) -> None:
            write(m / "f", b"-" * 8, sync=True)
            sync_dir(m)
            for i, letter in enumerate(letters):
                write(m / "f", bytes([letter]), offset=i)

        subsets = set()
        for seed in SEEDS:
            image, report = cut(cell, f"s{seed}", TornSeq(seed), work)
            kept = {offset for offset, _, fate, _ in writes_of(report, "f") if fate == KEPT}
            expected = bytes(letters[i] if i in kept else ord("-") for i in range(8))
            assert {"f": expected} == image
            assert (len(kept), 8 - len(kept), 8 - len(kept)) == (
                report.files["f"].kept_ops,
                report.files["f"].dropped_ops,
                report.files["f"].lost_bytes,  # the live bytes the image does not hold
            )
            subsets.add(frozenset(kept))

        assert len(subsets) > 1
        assert any(s and min(s) > 0 for s in subsets) or any(
            sorted(s) != list(range(len(s))) for s in subsets
        ), subsets

    def test_entry_changes_are_dropped(self, cell: Path) -> None:
        """A new file's name needs its directory's sync: torn-seq never keeps it, and the
        new file's writes reach nothing (reported dropped)."""

        def work(m: Path) -> None:
            sync_dir(m)
            write(m / "g", b"new", sync=True)
            write(m / "g", b"NEW")

        for seed in SEEDS:
            image, report = cut(cell, f"s{seed}", TornSeq(seed), work)
            assert {} == image
            assert all(o.fate == DROPPED for o in report.ops), report.ops


class TestReorder:
    def test_each_file_keeps_a_prefix_and_names_are_independent(self, cell: Path) -> None:
        """Two files with four one-byte writes each, a new file (its data synced, its
        name not), a rename: each file's image is a prefix of its writes, drawn apart
        from the other's, and the directory keeps a prefix of (create, rename)."""

        def work(m: Path) -> None:
            for name in ("a", "b"):
                write(m / name, b"----", sync=True)
            sync_dir(m)
            for i in range(4):
                write(m / "a", b"A", offset=i)
                write(m / "b", b"B", offset=i)
            write(m / "c", b"synced data", sync=True)
            os.rename(m / "b", m / "b2")

        prefixes = set()
        for seed in range(12):
            image, report = cut(cell, f"s{seed}", Reorder(seed), work)
            entries = [o.fate for o in report.ops if o.op in ("create", "rename")]
            assert entries in ([DROPPED, DROPPED], [KEPT, DROPPED], [KEPT, KEPT]), entries
            b_name = "b2" if entries[1] == KEPT else "b"
            n = {}
            for name, letter, path in (("a", b"A", "a"), ("b", b"B", b_name)):
                n[name] = image[path].count(letter)
                assert letter * n[name] + b"-" * (4 - n[name]) == image[path]
            expected_names = {"a", b_name} | ({"c"} if entries[0] == KEPT else set())
            assert expected_names == set(image)
            if "c" in image:
                assert b"synced data" == image["c"]
            prefixes.add((n["a"], n["b"]))

        assert any(a != b for a, b in prefixes), prefixes

    def test_a_truncation_is_an_operation_in_the_files_order(self, cell: Path) -> None:
        """A truncation then a write past the new end: the prefix kept is none, the
        truncation, or both (the bytes between the two are zeros); never the write alone."""

        def work(m: Path) -> None:
            write(m / "f", b"0123456789", sync=True)
            sync_dir(m)
            os.truncate(m / "f", 4)
            write(m / "f", b"AB", offset=6)

        images = {0: b"0123456789", 1: b"0123", 2: b"0123\0\0AB"}
        seen = set()
        for seed in range(12):
            image, report = cut(cell, f"s{seed}", Reorder(seed), work)
            kept = report.files["f"].kept_ops
            assert {"f": images[kept]} == image, (seed, report.ops)
            assert ["truncate", "write"] == [o.op for o in report.ops]
            seen.add(kept)

        assert {0, 1, 2} == seen

    def test_a_rename_between_directories_is_two_independent_changes(self, cell: Path) -> None:
        """a/f renamed to b/f, neither directory synced since: each directory keeps its own
        change or not, so the image has the file at a/f, at b/f, at both or at neither,
        as the report's two fates say."""

        def work(m: Path) -> None:
            for d in ("a", "b"):
                (m / d).mkdir()
            write(m / "a" / "f", b"moved", sync=True)
            for d in ("a", "b", ""):
                sync_dir(m / d)
            os.rename(m / "a" / "f", m / "b" / "f")

        seen = set()
        for seed in range(16):
            image, report = cut(cell, f"s{seed}", Reorder(seed), work)
            leave, arrive = [o.fate == KEPT for o in report.ops if o.op == "rename"]
            expected = {"b/f": b"moved"} if arrive else {}
            if not leave:
                expected["a/f"] = b"moved"
            assert expected == image, (seed, report.ops)
            seen.add((leave, arrive))

        assert {(False, False), (False, True), (True, False), (True, True)} == seen


class TestReport:
    def test_an_unlinked_files_writes_are_named_by_its_last_name(self, cell: Path) -> None:
        """A journal created, written and unlinked with no sync between: its writes are
        listed under its last name, marked unlinked."""

        def work(m: Path) -> None:
            sync_dir(m)
            write(m / "j", b"journal")
            os.unlink(m / "j")

        _, report = cut(cell, "m", TornSeq(0), work)

        assert [("create", "j"), ("write", "j (unlinked)"), ("unlink", "j")] == [
            (o.op, o.path) for o in report.ops
        ]
