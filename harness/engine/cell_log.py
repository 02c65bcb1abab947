"""A campaign's finished cells, held compactly until the report is written.

A cell's timeline, store snapshot at the crash, stderr tail and diff are most of what
it holds in memory (about 3.5 of 4.6 KB a cell on the default matrix) and are read once,
when the report is written. The log keeps them as compressed JSON (about 0.6 KB) and
rebuilds them as each cell is read. What the summary, the grouping and the accept marks
read (verdicts, findings, counts) stays in the cell's head, so those passes decode
nothing.
"""

from __future__ import annotations

import dataclasses
import json
import zlib
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import Any, overload

from killpoint.values.cell import CellResult
from killpoint.values.sentences import count
from killpoint.values.timeline import event_from_json

# The fields read only when a whole cell is read (its report entry, its failure text).
EVIDENCE = ("timeline", "store_at_crash", "stderr_tail", "diff")
_EMPTY: dict[str, Any] = {"timeline": [], "store_at_crash": None, "stderr_tail": "", "diff": []}


Packed = tuple[CellResult, bytes]  # a head and its compressed evidence


def pack(cell: CellResult) -> Packed:
    """The cell without its evidence (its head), and the evidence compressed."""
    evidence = {name: getattr(cell, name) for name in EVIDENCE}
    evidence["timeline"] = [list(e) for e in cell.timeline]
    text = json.dumps(evidence, separators=(",", ":"), ensure_ascii=False)
    # surrogatepass: run content may hold a lone surrogate (a JSON "\ud800" a runtime
    # decoded); it is kept as it came until the report makes it visible.
    return dataclasses.replace(cell, **_EMPTY), zlib.compress(
        text.encode("utf-8", "surrogatepass"), 1
    )


def unpack(head: CellResult, blob: bytes) -> CellResult:
    evidence = json.loads(zlib.decompress(blob).decode("utf-8", "surrogatepass"))
    evidence["timeline"] = [event_from_json(e) for e in evidence["timeline"]]
    return dataclasses.replace(head, **evidence)


class CellLog(Sequence[CellResult]):
    """Finished cells in the order they were added (or sorted). Reading a cell builds it
    anew around its head: its findings and sides are the head's own, so an accept mark
    written into a finding stays, but a field set on the cell read does not. Mark cells
    before adding them, or through `heads()`."""

    def __init__(self, cells: Iterable[CellResult] = ()) -> None:
        self._cells: list[Packed] = [pack(c) for c in cells]

    @classmethod
    def of_packed(cls, entries: Iterable[Packed]) -> CellLog:
        """A log of cells packed elsewhere (the pytest plugin packs each as it arrives)."""
        log = cls()
        log._cells = list(entries)
        return log

    def append(self, cell: CellResult) -> None:
        self._cells.append(pack(cell))

    def heads(self) -> list[CellResult]:
        """The cells without their evidence (empty timeline, diff, stderr and store),
        as held: for passes that read verdicts, findings and counts."""
        return [head for head, _ in self._cells]

    def select(self, keep: Callable[[CellResult], bool]) -> list[CellResult]:
        """The whole cells whose heads `keep` accepts: only those are decoded."""
        return [unpack(head, blob) for head, blob in self._cells if keep(head)]

    def sort(self, key: Callable[[CellResult], Any]) -> None:
        """Sort by a key of the heads (an id, a verdict, a schedule)."""
        self._cells.sort(key=lambda entry: key(entry[0]))

    def __len__(self) -> int:
        return len(self._cells)

    @overload
    def __getitem__(self, index: int) -> CellResult: ...

    @overload
    def __getitem__(self, index: slice) -> list[CellResult]: ...

    def __getitem__(self, index: int | slice) -> CellResult | list[CellResult]:
        if isinstance(index, slice):
            return [unpack(head, blob) for head, blob in self._cells[index]]
        return unpack(*self._cells[index])

    def __iter__(self) -> Iterator[CellResult]:
        for head, blob in self._cells:
            yield unpack(head, blob)

    def __repr__(self) -> str:
        return f"CellLog({count(len(self), 'cell')})"


def heads(cells: Sequence[CellResult]) -> Sequence[CellResult]:
    """The cells' heads when they are a log, else the cells themselves."""
    return cells.heads() if isinstance(cells, CellLog) else cells


def select(cells: Sequence[CellResult], keep: Callable[[CellResult], bool]) -> list[CellResult]:
    """The whole cells `keep` accepts, decoding only those when the cells are a log."""
    if isinstance(cells, CellLog):
        return cells.select(keep)
    return [c for c in cells if keep(c)]


__all__ = ["EVIDENCE", "CellLog", "Packed", "heads", "pack", "select", "unpack"]
