"""Cut models: which of the operations not yet synced at a power cut reach the image.

The durable tree (durable.py) keeps, besides what every sync made durable, the log of the
operations made since: each file's writes, truncations and allocations since its last
sync, each directory's entry changes since its last sync, in the order the mount served
them. A model is a pure function of that log and a seed: it says which operations are
kept whole, which are torn (a prefix of a write kept) and, by leaving them out, which
are dropped. The tree then applies the kept ones, in their order, on top of the durable
state. Each rule and the crash model it follows is in docs/powerloss.md ("Cut models").

- synced   nothing unsynced survives (the default: the strictest crash state);
- torn-op  of each file, its last unsynced operation, when a write, keeps a prefix ending
           on a unit boundary (a 512-byte sector, or a byte); everything else is dropped;
- torn-seq each unsynced content operation (write, truncation, allocation) of every file
           is kept or dropped by a coin of the seed, and the kept ones apply in order;
           entry changes are dropped;
- reorder  of each file, a prefix of its unsynced content operations is kept, of each
           directory a prefix of its entry changes, every prefix drawn independently.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from killpoint.errors import CutModelError

SECTOR = 512

# The operations that change a file's content (the others change a directory's entries).
WRITE, TRUNCATE, ALLOCATE = "write", "truncate", "allocate"
CONTENT_OPS = (WRITE, TRUNCATE, ALLOCATE)


@dataclass(frozen=True)
class Op:
    """One unsynced operation, as the mount served it.

    `seq` orders every operation of the mount; `target` is the file (content operations)
    or the directory (entry changes) it changed, by the tree's serial number for it;
    `offset`/`length` are a write's or an allocation's range, a truncation's new length
    in `length`; `name` is the entry an entry change made or removed in that directory,
    `source` where a rename (or a hard link) came from. A rename within one directory is
    one operation (`name` the new name, `source` the old); between two, one in each: the
    old name leaving (`source` empty) and the new arriving (`source` the old path)."""

    seq: int
    kind: str
    target: int
    offset: int = 0
    length: int = 0
    name: str = ""
    source: str = ""

    @property
    def content(self) -> bool:
        return self.kind in CONTENT_OPS


@dataclass(frozen=True)
class Choice:
    """What a model keeps: `kept`, the operations applied whole; `torn`, the writes of
    which only a prefix lands (seq -> bytes kept, 0 < n < length). The rest is dropped."""

    kept: frozenset[int] = frozenset()
    torn: Mapping[int, int] = field(default_factory=dict)


class CutModel(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def seed(self) -> int: ...

    def choose(self, ops: Sequence[Op]) -> Choice:
        """The operations kept (`ops` in seq order; the same log and seed, the same choice)."""
        ...

    def describe(self) -> str: ...

    def to_json(self) -> dict[str, Any]: ...


def _groups(ops: Sequence[Op], content: bool) -> list[list[Op]]:
    """The operations by file (content) or by directory (entries), each group in seq
    order, groups in the order of their first operation (so draws do not depend on the
    tree's serial numbers)."""
    groups: dict[int, list[Op]] = {}
    for op in ops:
        if op.content is content:
            groups.setdefault(op.target, []).append(op)
    return list(groups.values())


@dataclass(frozen=True)
class Synced:
    """Nothing that was not synced survives."""

    seed: int = 0
    name: str = "synced"

    def choose(self, ops: Sequence[Op]) -> Choice:
        return Choice()

    def describe(self) -> str:
        return "synced: only what was synced"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "seed": self.seed}


@dataclass(frozen=True)
class TornOp:
    """Of each file, its last unsynced operation, when it is a write, keeps a prefix: up
    to a file offset on a `unit` boundary strictly inside the write, drawn from the seed.
    A write with no such boundary inside it (within one sector, at sector units) is
    atomic at that unit and dropped; every other unsynced operation is dropped."""

    unit: int = SECTOR
    seed: int = 0
    name: str = "torn-op"

    def choose(self, ops: Sequence[Op]) -> Choice:
        rng = random.Random(self.seed)
        torn: dict[int, int] = {}
        for group in _groups(ops, content=True):
            last = group[-1]
            if last.kind != WRITE:
                continue
            end = last.offset + last.length
            first = (last.offset // self.unit + 1) * self.unit  # the first boundary past its start
            if first >= end:
                continue
            boundary = rng.randrange(first, end, self.unit)
            torn[last.seq] = boundary - last.offset
        return Choice(torn=torn)

    def describe(self) -> str:
        unit = {SECTOR: "sector (512 B)", 1: "byte"}.get(self.unit, f"{self.unit}-byte")
        return (
            f"torn-op: each file's last unsynced write torn at a {unit} boundary (seed {self.seed})"
        )

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "seed": self.seed, "unit": self.unit}


@dataclass(frozen=True)
class TornSeq:
    """Each unsynced content operation of every file kept or dropped by a fair coin of the
    seed; the kept ones apply in their order. Entry changes are dropped."""

    seed: int = 0
    name: str = "torn-seq"

    def choose(self, ops: Sequence[Op]) -> Choice:
        rng = random.Random(self.seed)
        return Choice(kept=frozenset(op.seq for op in ops if op.content and rng.random() < 0.5))

    def describe(self) -> str:
        return f"torn-seq: a seeded subset of the unsynced writes kept, in order (seed {self.seed})"

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "seed": self.seed}


@dataclass(frozen=True)
class Reorder:
    """Each file keeps a prefix of its unsynced content operations and each directory a
    prefix of its entry changes, each prefix's length drawn from the seed (0 to all)
    independently of every other file and directory. Within a file or a directory order
    holds; across them, and between a file's data and its name, it does not."""

    seed: int = 0
    name: str = "reorder"

    def choose(self, ops: Sequence[Op]) -> Choice:
        rng = random.Random(self.seed)
        kept: set[int] = set()
        for content in (True, False):
            for group in _groups(ops, content):
                n = rng.randint(0, len(group))
                kept.update(op.seq for op in group[:n])
        return Choice(kept=frozenset(kept))

    def describe(self) -> str:
        return (
            "reorder: a prefix of each file's unsynced writes and of each directory's entry "
            f"changes, drawn independently (seed {self.seed})"
        )

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "seed": self.seed}


MODELS = ("synced", "torn-op", "torn-seq", "reorder")
SPEC_HELP = "synced (the default), torn-op, torn-op:byte, torn-op:N, torn-seq, reorder"


def parse_cut(text: str, seed: int = 0) -> CutModel:
    """`synced`, `torn-op` (sector boundary), `torn-op:byte`, `torn-op:N` (bytes),
    `torn-seq`, `reorder`: the model, with `seed`."""
    name, _, arg = str(text).strip().partition(":")
    if name not in MODELS:
        raise CutModelError(text, f"not a cut model; choose from {SPEC_HELP}")
    if arg and name != "torn-op":
        raise CutModelError(
            text, f"only torn-op takes a unit (torn-op:byte, torn-op:N); give {name!r} alone"
        )
    if name == "synced":
        return Synced(seed)
    if name == "torn-seq":
        return TornSeq(seed)
    if name == "reorder":
        return Reorder(seed)
    if not arg or arg == "sector":
        return TornOp(SECTOR, seed)
    if arg == "byte":
        return TornOp(1, seed)
    if arg.isdigit() and int(arg) >= 1:
        return TornOp(int(arg), seed)
    raise CutModelError(
        text,
        f"the unit {arg!r} is not sector, byte or a whole number of bytes >= 1, e.g. torn-op:byte",
    )


def spec_of(model: CutModel) -> str:
    """The text parse_cut reads back into `model` (its seed aside)."""
    if isinstance(model, TornOp) and model.unit != SECTOR:
        return "torn-op:byte" if model.unit == 1 else f"torn-op:{model.unit}"
    return model.name


def from_json(data: Mapping[str, Any]) -> CutModel:
    model = parse_cut(str(data["name"]), int(data.get("seed", 0)))
    if isinstance(model, TornOp):
        return TornOp(int(data.get("unit", SECTOR)), model.seed)
    return model


def cell_seed(cell_id: str) -> int:
    """A seed of the cell's own, the same in every campaign and replay (not Python's
    randomised hash)."""
    return int.from_bytes(hashlib.sha256(cell_id.encode()).digest()[:4], "big")


__all__ = [
    "MODELS",
    "SECTOR",
    "SPEC_HELP",
    "Choice",
    "CutModel",
    "CutModelError",
    "Op",
    "Reorder",
    "Synced",
    "TornOp",
    "TornSeq",
    "cell_seed",
    "from_json",
    "parse_cut",
    "spec_of",
]
