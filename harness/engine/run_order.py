"""The order a campaign runs its cells in: the most informative first.

A broken runtime shows in some kinds of point more than in others, and in some rows, so
a campaign that runs its plan row after row finds the first unexpected cell only when
that row comes up. Run in this order instead, a campaign reaches every (row, kind) early:

1. one cell of each (row, kind): which one, and where it goes among the others, drawn
   from the seed;
2. the cells that failed before (the last report's unexpected cells, and those a search
   found): what broke last time is the likeliest to break again;
3. the rest, drawn from the seed too.

The order is a key of each cell alone (its tier, then a draw from the seed and its id),
so it needs no other row: a row's cells can start as soon as its own baseline is done,
each in its place, and a shard, whose cells are a subset, runs them in the same order as
the whole campaign would. A row's baseline goes after the first cells of the rows already
planned and before the rest (`baseline_key`). `--order plan` keeps the plan's order (every
baseline, then row after row).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from killpoint.values.cell import Cell

ORDERS = ("informative", "plan")
FIRST_OF_KIND, FAILED_BEFORE, REST = 0, 1, 2
Key = tuple[int, int, int]  # (tier, row under `plan`, a draw or the place in the row)


def draw(seed: int, cell_id: str) -> int:
    """A number from the seed and the cell's id: the same on every machine and shard."""
    digest = hashlib.blake2b(f"{seed}/{cell_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big")


def kind_of(cell: Cell) -> str:
    """The kind a cell stands for: its first point's (a second crash is a later one)."""
    return cell.schedule.first.kind


class CellOrder(Protocol):
    """Which cells start first, as a key of each (smaller runs first): a campaign's seam
    (killpoint.engine.campaign.Campaign's `order`). Keys of one row's cells come as soon
    as its baseline is done, so a key says where a cell goes among every row's."""

    def keys(self, row_cells: Sequence[Cell], row: int = 0) -> dict[str, Key]:
        """The key of each cell of one row, by cell id; `row`: its place in the plan."""
        ...

    def baseline_key(self, row: int) -> Key:
        """The key of a row's baseline (the job that plans the row's cells)."""
        ...


@dataclass(frozen=True)
class RunOrder:
    """Keys of cells, row by row; `failed`: ids of cells that failed before."""

    seed: int
    failed: frozenset[str] = field(default_factory=frozenset)
    order: str = "informative"

    def keys(self, row_cells: Sequence[Cell], row: int = 0) -> dict[str, Key]:
        """The key of each cell of one row, by cell id (smaller runs first); `row`: the
        row's place in the plan (what `plan` orders by)."""
        if self.order == "plan":
            return {c.id: (REST, row, n) for n, c in enumerate(row_cells)}
        draws = {c.id: draw(self.seed, c.id) for c in row_cells}
        first: dict[str, str] = {}  # kind -> the id of its cell that runs first
        for c in row_cells:
            kind = kind_of(c)
            if kind not in first or draws[c.id] < draws[first[kind]]:
                first[kind] = c.id
        chosen = set(first.values())

        def tier(cell_id: str) -> int:
            if cell_id in chosen:
                return FIRST_OF_KIND
            return FAILED_BEFORE if cell_id in self.failed else REST

        return {c.id: (tier(c.id), 0, draws[c.id]) for c in row_cells}

    def baseline_key(self, row: int) -> Key:
        """A row's baseline's key: after the first cell of each kind of the rows whose
        baselines are done, before everything else. A broken runtime shows in most rows,
        so a failure comes from the first rows' first cells, while the other baselines
        wait a little; under `plan`, before every cell (row after row)."""
        if self.order == "plan":
            return (-1, row, 0)
        return (FIRST_OF_KIND, 1, row)  # a cell of the tier has 0 there

    def ordered(self, rows: Iterable[Sequence[Cell]]) -> list[Cell]:
        """Every cell of these rows (in the plan's row order), in the order a campaign
        runs them."""
        keyed: list[tuple[Key, Cell]] = []
        for r, row_cells in enumerate(rows):
            keys = self.keys(row_cells, r)
            keyed += [(keys[c.id], c) for c in row_cells]
        keyed.sort(key=lambda k: k[0])
        return [c for _, c in keyed]


__all__ = [
    "FAILED_BEFORE",
    "FIRST_OF_KIND",
    "ORDERS",
    "REST",
    "CellOrder",
    "Key",
    "RunOrder",
    "draw",
    "kind_of",
]
