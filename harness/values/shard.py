"""Which shard of a campaign a cell belongs to: `--shard K/N` (CLI), `--crash-shard K/N`
(pytest plugin).

A cell goes to shard `1 + int(sha256(cell id)[:8]) mod N`: the first eight bytes of the
SHA-256 of its id (`reference/research/tool-batch/sqlite/after-checkpoint:2`), read as a
big-endian number. The id alone decides, so every machine, Python version and process
agrees without talking to the others (Python's own `hash()` is salted per process), and a
cell stays in its shard when other cells are added or removed: only N moves cells.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import Any

from killpoint.errors import ShardError


@dataclass(frozen=True)
class Shard:
    index: int  # 1..count
    count: int

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"

    def owns(self, cell_id: str) -> bool:
        return shard_of(cell_id, self.count) == self.index

    def to_json(self) -> dict[str, int]:
        return {"index": self.index, "count": self.count}

    @classmethod
    def from_json(cls, data: Any) -> Shard:
        if not isinstance(data, dict):
            raise ShardError(f"a shard should be an object, got {data!r}")
        return parse_shard(f"{data.get('index')}/{data.get('count')}")


def shard_of(cell_id: str, count: int) -> int:
    """The shard (1..count) that runs the cell."""
    digest = hashlib.sha256(cell_id.encode("utf-8")).digest()
    return 1 + int.from_bytes(digest[:8], "big") % count


def parse_shard(text: Any) -> Shard:
    """`K/N` with 1 <= K <= N; ShardError saying why, with an example of the fix."""
    if isinstance(text, Shard):
        return text
    k, slash, n = str(text).strip().partition("/")
    if not slash or not k.strip().isdigit() or not n.strip().isdigit():
        raise ShardError("give K/N, two whole numbers (shard K of N), e.g. 1/2")
    index, count = int(k), int(n)
    if count < 1:
        raise ShardError("N counts the shards: give at least 1, e.g. 1/2")
    if not 1 <= index <= count:
        raise ShardError(f"K counts from 1 to N; give 1/{count} to {count}/{count}")
    return Shard(index, count)


def unseeded(shard: Shard, label: str = "--shard", seed: str = "--seed") -> str:
    """The line refusing a shard without a seed: shards chosen their own seeds would
    sample different random points, and `killpoint merge` would refuse them at the end."""
    return (
        f"killpoint: {label}={str(shard)!r} needs {seed}: every shard must plan the same "
        f"campaign; give each shard the same {seed} N (in CI, e.g. the run's id)"
    )


__all__ = ["Shard", "ShardError", "parse_shard", "shard_of", "unseeded"]
