"""The cut models alone: pure functions of an operation log and a seed (no tree, no FUSE),
one class per model's rule (docs/powerloss.md, "Cut models")."""

# ruff: noqa: SIM300

from __future__ import annotations

import pytest

from killpoint.errors import CutModelError
from killpoint.powerloss.cut_models import (
    Op,
    Reorder,
    Synced,
    TornOp,
    TornSeq,
    cell_seed,
    from_json,
    parse_cut,
    spec_of,
)

SEEDS = range(200)


def writes(target: int, *ranges: tuple[int, int], first_seq: int = 1) -> list[Op]:
    return [
        Op(first_seq + n, "write", target, offset, length)
        for n, (offset, length) in enumerate(ranges)
    ]


def interleaved() -> list[Op]:
    """Two files' writes and a directory's entry changes, interleaved."""
    return [
        Op(1, "create", 1, name="a"),
        Op(2, "write", 2, 0, 10),
        Op(3, "create", 1, name="b"),
        Op(4, "write", 3, 0, 10),
        Op(5, "write", 2, 10, 10),
        Op(6, "write", 3, 10, 10),
        Op(7, "rename", 1, name="c", source="b"),
        Op(8, "truncate", 2, length=5),
        Op(9, "write", 3, 20, 10),
    ]


class TestSynced:
    def test_nothing_is_kept(self) -> None:
        choice = Synced().choose(interleaved())

        assert (frozenset(), {}) == (choice.kept, dict(choice.torn))


class TestTornOp:
    def test_only_each_files_last_write_is_torn_on_a_sector_boundary(self) -> None:
        """Of each file, the last write keeps a prefix ending on a 512-byte file offset
        strictly inside it; nothing else is kept."""
        ops = writes(7, (0, 4096), (4096, 2048)) + writes(8, (100, 1500), first_seq=3)
        seen: dict[int, set[int]] = {2: set(), 3: set()}
        for seed in SEEDS:
            choice = TornOp(seed=seed).choose(ops)
            assert frozenset() == choice.kept
            assert {2, 3} == set(choice.torn)
            seen[2].add(4096 + choice.torn[2])
            seen[3].add(100 + choice.torn[3])

        assert {4608, 5120, 5632} == seen[2]  # every boundary inside [4096, 6144)
        assert {512, 1024, 1536} == seen[3]  # the offsets, not the lengths, are aligned

    def test_a_write_within_one_sector_is_atomic(self) -> None:
        """No sector boundary inside the write: it is not torn (and so dropped)."""
        ops = writes(7, (512, 512), (1024 + 10, 400))

        assert {} == dict(TornOp(seed=3).choose(ops).torn)

    def test_at_byte_units_every_inner_offset_is_a_boundary(self) -> None:
        ops = writes(7, (10, 4))
        kept = {TornOp(unit=1, seed=seed).choose(ops).torn[1] for seed in SEEDS}

        assert {1, 2, 3} == kept

    def test_a_file_whose_last_operation_is_a_truncation_is_not_torn(self) -> None:
        ops = [*writes(7, (0, 4096)), Op(2, "truncate", 7, length=100)]

        assert {} == dict(TornOp(seed=1).choose(ops).torn)

    def test_the_same_seed_tears_the_same_way(self) -> None:
        ops = writes(7, (0, 65536))

        assert TornOp(seed=5).choose(ops) == TornOp(seed=5).choose(ops)


class TestTornSeq:
    def test_a_subset_of_content_operations_and_no_entry_change(self) -> None:
        """Each content operation is kept by some seed and dropped by another; entry
        changes never are kept; nothing is torn."""
        ops = interleaved()
        content = {op.seq for op in ops if op.content}
        kept_by: dict[int, int] = dict.fromkeys(content, 0)
        for seed in SEEDS:
            choice = TornSeq(seed).choose(ops)
            assert choice.kept <= content
            assert {} == dict(choice.torn)
            for seq in choice.kept:
                kept_by[seq] += 1

        assert all(0 < n < len(SEEDS) for n in kept_by.values()), kept_by

    def test_later_writes_are_kept_without_earlier_ones(self) -> None:
        """Not a prefix: some seed keeps a file's second write and drops its first."""
        ops = writes(7, (0, 10), (10, 10))

        assert any(TornSeq(seed).choose(ops).kept == {2} for seed in SEEDS)

    def test_the_same_seed_keeps_the_same_subset(self) -> None:
        assert TornSeq(9).choose(interleaved()) == TornSeq(9).choose(interleaved())


class TestReorder:
    def test_each_file_and_directory_keeps_a_prefix_of_its_own(self) -> None:
        """Whatever the seed, what a file (or a directory) keeps is a prefix of its own
        operations: never a later one without every earlier one."""
        ops = interleaved()
        groups = {
            "a": [2, 5, 8],
            "b": [4, 6, 9],
            "dir": [1, 3, 7],
        }
        for seed in SEEDS:
            kept = Reorder(seed).choose(ops).kept
            for seqs in groups.values():
                n = sum(s in kept for s in seqs)
                assert set(seqs[:n]) == {s for s in seqs if s in kept}, (seed, kept)

    def test_the_prefixes_are_independent(self) -> None:
        """Some seed keeps all of one file and none of the other, and the other way round;
        some keeps entry changes with no data and data with no entry change."""
        ops = interleaved()
        kept = [Reorder(seed).choose(ops).kept for seed in SEEDS]

        assert any({2, 5, 8} <= k and not k & {4, 6, 9} for k in kept)
        assert any({4, 6, 9} <= k and not k & {2, 5, 8} for k in kept)
        assert any({1, 3, 7} <= k and not k & {2, 4, 5, 6, 8, 9} for k in kept)
        assert any(not k & {1, 3, 7} and {2, 4} <= k for k in kept)


class TestSpecs:
    @pytest.mark.parametrize(
        ("text", "model"),
        [
            ("synced", Synced(4)),
            ("torn-op", TornOp(512, 4)),
            ("torn-op:byte", TornOp(1, 4)),
            ("torn-op:4096", TornOp(4096, 4)),
            ("torn-seq", TornSeq(4)),
            ("reorder", Reorder(4)),
        ],
    )
    def test_each_name_reads_back(self, text: str, model: object) -> None:
        parsed = parse_cut(text, seed=4)

        assert (model, parsed) == (parsed, from_json(parsed.to_json()))
        assert text.replace("torn-op:sector", "torn-op") == spec_of(parsed)

    @pytest.mark.parametrize(
        ("text", "message"),
        [
            (
                "torn",
                "cut model 'torn': not a cut model; choose from synced .the default., torn-op,",
            ),
            ("torn-seq:3", "only torn-op takes a unit .torn-op:byte, torn-op:N.; give 'torn-seq'"),
            ("torn-op:0", "the unit '0' is not sector, byte or a whole number"),
        ],
    )
    def test_a_bad_name_is_refused_with_the_choices(self, text: str, message: str) -> None:
        with pytest.raises(CutModelError, match=message):
            parse_cut(text)

    def test_a_cells_seed_is_stable(self) -> None:
        """Not Python's per-process hash: the same in every campaign and every replay."""
        assert 2071227524 == cell_seed("reference/research/tool-batch/sqlite/power-loss:5")
