"""Which shard runs a cell: a stable hash of the cell id, and `K/N` read or refused."""

# ruff: noqa: SIM300

from __future__ import annotations

import hashlib
import subprocess
import sys

import pytest

from killpoint.errors import ShardError
from killpoint.values.shard import Shard, parse_shard, shard_of

IDS = [
    f"reference/{s}/{m}/sqlite/after-checkpoint:{k}"
    for s in ("research", "parallel", "chain")
    for m in ("runs", "tool-batch", "tool")
    for k in range(1, 12)
]


class TestAssignment:
    def test_the_shard_is_the_documented_hash_of_the_id(self) -> None:
        """1 + the first 8 bytes of sha256(id), big-endian, mod N: what docs/how-to/ci.md says."""
        for cell_id in IDS:
            number = int.from_bytes(hashlib.sha256(cell_id.encode()).digest()[:8], "big")
            assert 1 + number % 3 == shard_of(cell_id, 3)

    def test_every_cell_is_in_exactly_one_shard(self) -> None:
        """The shards of N split the cells: each once, none left out, none empty here."""
        shards = [Shard(k, 4) for k in range(1, 5)]
        for cell_id in IDS:
            assert 1 == sum(s.owns(cell_id) for s in shards)
        assert all(any(s.owns(i) for i in IDS) for s in shards)

    def test_another_process_assigns_the_same(self) -> None:
        """No per-process salt (Python's hash() has one): a fresh interpreter agrees."""
        code = (
            "import sys; from killpoint.values.shard import shard_of; "
            "print([shard_of(i, 5) for i in sys.argv[1:]])"
        )
        out = subprocess.run(
            [sys.executable, "-c", code, *IDS[:10]],
            capture_output=True,
            text=True,
            check=True,
            env={"PYTHONHASHSEED": "123"},
        )
        assert str([shard_of(i, 5) for i in IDS[:10]]) == out.stdout.strip()

    def test_one_shard_holds_everything(self) -> None:
        assert all(Shard(1, 1).owns(i) for i in IDS)


class TestParsing:
    def test_k_of_n(self) -> None:
        assert Shard(2, 3) == parse_shard(" 2/3 ")
        assert "2/3" == str(parse_shard("2/3"))
        assert Shard(2, 3) == Shard.from_json(Shard(2, 3).to_json())

    @pytest.mark.parametrize(
        ("text", "fix"),
        [
            ("0/2", "give 1/2 to 2/2"),
            ("3/2", "give 1/2 to 2/2"),
            ("a/b", "e.g. 1/2"),
            ("2", "e.g. 1/2"),
            ("1/0", "at least 1"),
            ("-1/2", "e.g. 1/2"),
        ],
    )
    def test_a_bad_value_says_what_to_give(self, text: str, fix: str) -> None:
        with pytest.raises(ShardError, match=fix):
            parse_shard(text)
