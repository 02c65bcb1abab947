"""The matrix of the HTML report: its columns (one per schedule, grouped by point kind), its
rows (one per runtime, scenario, mode and store, in the campaign's order), each cell's
state, and the list of unexpected cells; with each cell's panel data (html_cells).

A cell's state is one letter the page styles: `e` expected (pale), `x` unexpected and
failing (solid, outlined), `l` unexpected at low severity only (dotted: shown, failing only
under `--fail-on low`), `a` accepted (dashed), `nr` planned and never run (hatched).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from killpoint import kinds
from killpoint.errors import PointError
from killpoint.report.html_cells import Strings, cell_data, describe
from killpoint.report.planned import (
    NO_CRASH,
    NO_CRASH_MEANS,
    ROW_FIELDS,
    no_crash_rows,
    read_not_planned,
    read_planned,
    row_of,
)
from killpoint.report.text import clip_head, split_excerpt, visible
from killpoint.values.findings import RANK, deciding_data, fails, open_severity
from killpoint.values.findings import VERDICTS as VERDICT_LIST
from killpoint.values.points import CrashPoint

# verdict: (glyph, meaning), most severe first (killpoint.values.findings)
VERDICTS: dict[str, tuple[str, str]] = {v.name: (v.glyph, v.meaning) for v in VERDICT_LIST}
UNKNOWN_GLYPH = "•"
KIND_MEANINGS: dict[str, str] = {k.name: k.meaning for k in kinds.REGISTRY.values()}
WORSE = {"e": 0, "l": 1, "a": 2, "x": 3}  # a cell twice (merged results): the worse shows
LISTED = {"x": 0, "l": 1, "a": 2}  # the order of the list of unexpected cells
# The column of the cells that made no crash (their row's baseline failed): no kind of
# point, so none of the campaign's columns, and drawn first, apart from the crash points.
NO_CRASH_KEY = "no crash"


@dataclass(frozen=True)
class Column:
    key: str  # the full schedule string, "after-checkpoint:2" or "after-checkpoint:2+mid-model:1"
    group: str  # the kinds, "after-checkpoint" or "after-checkpoint → mid-model"
    label: str  # what the header cell shows under its group: "2", "1:0", "2+1"
    sort: tuple[Any, ...]
    starts_group: bool = False

    @property
    def title(self) -> str:
        return NO_CRASH if self.key == NO_CRASH_KEY else visible(self.key)


def column_for(schedule: Sequence[str]) -> Column:
    key = "+".join(schedule)
    parsed: list[CrashPoint] = []
    for text in schedule:
        try:
            parsed.append(kinds.parse_point(text))
        except PointError:
            # A point this version does not know: a column of its own, after the known ones.
            return Column(key, visible(key), "", (len(schedule), (len(kinds.REGISTRY), 0, 0), key))
    group = " → ".join(p.kind for p in parsed)
    label = "+".join(str(p)[len(p.kind) + 1 :] for p in parsed)
    return Column(key, group, label, (len(parsed), *(kinds.point_order(p) for p in parsed)))


@dataclass
class Row:
    runtime: str
    scenario: str
    mode: str
    store: str
    sort: tuple[int, ...]
    mode_index: int
    # aligned with columns; a planned cell that never ran is {"state": "nr", "schedule": ...}
    cells: list[dict[str, Any] | None] = field(default_factory=list)
    skipped: str | None = None
    not_run: int = 0  # planned cells without a result
    unplanned: bool = False  # planned row whose cells were never planned: the campaign stopped
    # Its baseline failed: which crash cells were not planned, and why (NotPlanned); the
    # worker log's end appended to the why (a traceback), apart: the page keeps its lines.
    not_planned: str = ""
    not_planned_log: str = ""
    not_planned_log_name: str = ""
    unexpected: int = 0  # unexpected and not accepted: what fails the campaign
    accepted: int = 0
    count: int = 0
    first_of_scenario: bool = False

    @property
    def wide(self) -> str:
        """What one cell across the row says in place of its cells ("": it has cells)."""
        if self.count or self.not_run:
            return ""
        if self.unplanned:
            return (
                "not run: the campaign stopped before this row's cells were planned "
                "(before every baseline had finished)"
            )
        return f"skipped: {self.skipped}" if self.skipped else ""


@dataclass
class Group:
    label: str
    span: int
    title: str = ""


def _order(values: Iterable[str], first: Sequence[str] = ()) -> dict[str, int]:
    order: dict[str, int] = {v: n for n, v in enumerate(first)}
    for v in values:
        order.setdefault(v, len(order))
    return order


def state_of(cell: Mapping[str, Any]) -> str:
    """The cell's state letter (the module's doc)."""
    if cell.get("expected", False):
        return "e"
    if cell.get("accepted"):
        return "a"
    return "x" if fails(open_severity(cell.get("findings") or []) or "high") else "l"


def _deciding_kind(cell: Mapping[str, Any]) -> str:
    """The kind of the finding that set the cell's verdict (for the list of unexpected cells)."""
    f = deciding_data(cell.get("findings") or [])
    return visible(f.get("kind", "")) if f is not None else ""


def _open_kinds(cell: Mapping[str, Any]) -> str:
    """Every kind of the cell's unexpected findings, the deciding one first: a cell listed
    under a group filter shows that group's kind even when another decides it."""
    first = _deciding_kind(cell)
    rest = [
        visible(f.get("kind", ""))
        for f in cell.get("findings") or []
        if isinstance(f, Mapping) and not f.get("expected") and f.get("verdict") != "ok"
    ]
    return ", ".join(dict.fromkeys(k for k in (first, *rest) if k))


def columns_of(
    cells: Sequence[Mapping[str, Any]],
    plan: Mapping[Any, Any] | None,
    no_crash: Collection[Any] = (),
) -> tuple[list[Column], list[Group]]:
    """Every schedule that ran or was planned, as a column, grouped by point kind (a
    planned column with no result at all is still drawn). The cells of the rows in
    `no_crash` (their baseline failed) made no crash: one column of their own, never the
    column of the point their id keeps."""
    by_key: dict[str, Column] = {}
    every = [
        [str(p) for p in cell.get("schedule") or []]
        for cell in cells
        if row_of(cell) not in no_crash
    ]
    every += [
        s.split("+")
        for row, schedules in (plan or {}).items()
        if row not in no_crash
        for s in schedules or ()
    ]
    for points in every:
        col = column_for(points)
        by_key.setdefault(col.key, col)
    if any(row_of(c) in no_crash for c in cells) or any(r in no_crash for r in plan or {}):
        by_key[NO_CRASH_KEY] = Column(NO_CRASH_KEY, NO_CRASH_KEY, "", (0,))
    columns: list[Column] = []
    groups: list[Group] = []
    for col in sorted(by_key.values(), key=lambda c: c.sort):
        if groups and groups[-1].label == col.group:
            groups[-1].span += 1
            columns.append(col)
        else:
            title = (
                NO_CRASH_MEANS
                if col.key == NO_CRASH_KEY
                else " → ".join(KIND_MEANINGS.get(k, "") for k in col.group.split(" → "))
            )
            groups.append(Group(visible(col.group), 1, title))
            columns.append(replace(col, starts_group=True))
    return columns, groups


@dataclass
class Matrix:
    """The matrix as the page draws it, the panel data of every cell, and the cells of
    the list view; `by_id`: the data indices of each cell id (a merged report may hold
    one twice)."""

    columns: list[Column]
    groups: list[Group]
    rows: list[Row]
    data: list[dict[str, Any]]
    listed: list[dict[str, Any]]
    missed: list[dict[str, Any]]
    by_id: dict[str, list[int]]
    plan: Mapping[Any, Any] | None


def _listed(
    cell: Mapping[str, Any], n: int, state: str, row: Row, no_crash: bool = False
) -> dict[str, Any]:
    verdict = str(cell.get("verdict", ""))
    first = str((cell.get("schedule") or [""])[0])
    schedule = "+".join(str(p) for p in cell.get("schedule") or [])
    kind, says = first.split(":", 1)[0], describe(first)
    if no_crash:  # no crash was made: not the point its id keeps, nor what that point means
        schedule, kind, says = NO_CRASH, NO_CRASH_KEY, NO_CRASH_MEANS
    return {
        "n": n,
        "verdict": verdict if verdict in VERDICTS else "unknown",
        "verdict_text": visible(verdict),
        "glyph": VERDICTS.get(verdict, (UNKNOWN_GLYPH, ""))[0],
        "rank": RANK.get(verdict, len(RANK)),
        "state": state,
        "kind": _deciding_kind(cell),
        "kinds": _open_kinds(cell),
        "point_kind": visible(kind),
        "schedule": visible(schedule),
        "says": visible(says),
        "runtime": row.runtime,
        "scenario": row.scenario,
        "mode": row.mode,
        "store": row.store,
        "detail": clip_head(visible(cell.get("detail") or ""), 240),
    }


class _Rows:
    """The matrix's rows by (runtime, scenario, mode, store), made on first sight, sorted
    in the campaign's order: its plan, its baselines, its cells, its skipped rows."""

    def __init__(self, document: Mapping[str, Any], plan: Mapping[Any, Any] | None, width: int):
        modes = [str(m) for m in document.get("modes") or []]
        everything = [
            *(dict(zip(ROW_FIELDS, row, strict=True)) for row in plan or {}),
            *(document.get("baselines") or []),
            *(document.get("cells") or []),
            *({"store": document.get("store", ""), **s} for s in document.get("skipped") or []),
        ]
        self.orders = [
            _order(str(c.get("runtime", "")) for c in everything),
            _order(str(c.get("scenario", "")) for c in everything),
            _order((str(c.get("mode", "")) for c in everything), modes),
            _order(str(c.get("store", "")) for c in everything),
        ]
        self.modes = list(self.orders[2])
        self.width = width
        self.rows: dict[tuple[str, ...], Row] = {}

    def __call__(self, item: Mapping[str, Any]) -> Row:
        key = tuple(str(item.get(k, "")) for k in ("runtime", "scenario", "mode", "store"))
        if key not in self.rows:
            runtime, scenario, mode, store = (visible(k) for k in key)
            sort = tuple(order[k] for order, k in zip(self.orders, key, strict=True))
            index = self.modes.index(key[2])
            self.rows[key] = Row(runtime, scenario, mode, store, sort, index, [None] * self.width)
        return self.rows[key]

    def ordered(self) -> list[Row]:
        found = sorted(self.rows.values(), key=lambda r: r.sort)
        for before, row in zip([None, *found], found, strict=False):
            row.first_of_scenario = before is None or before.sort[:2] != row.sort[:2]
        return found


def _add_cell(
    matrix: Matrix,
    row: Row,
    cell: Mapping[str, Any],
    slot: int,
    strings: Strings,
    no_crash: bool = False,
) -> None:
    """One cell's panel data, its row's counts, the list and its slot in the row.
    `no_crash`: the cell made no crash (its row's baseline failed)."""
    verdict = str(cell.get("verdict", ""))
    state = state_of(cell)
    n = len(matrix.data)
    matrix.data.append(cell_data(cell, strings, no_crash=no_crash))
    matrix.by_id.setdefault(str(cell.get("id", "")), []).append(n)
    row.count += 1
    row.unexpected += state == "x"
    row.accepted += state == "a"
    if verdict == "missed":
        matrix.missed.append({"n": n, "id": visible(cell.get("id", ""))})
    if state != "e":
        matrix.listed.append(_listed(cell, n, state, row, no_crash))
    shown = row.cells[slot]
    if shown is not None and WORSE[state] <= WORSE.get(shown["state"], 0):
        return  # the same cell twice (merged results): the matrix shows the worse one
    row.cells[slot] = {
        "n": n,
        "verdict": verdict if verdict in VERDICTS else "unknown",
        "verdict_text": visible(verdict),
        "glyph": VERDICTS.get(verdict, (UNKNOWN_GLYPH, ""))[0],
        "state": state,
        "duplicates": cell.get("duplicates") or 0,
        "schedule": NO_CRASH
        if no_crash
        else visible("+".join(str(p) for p in cell.get("schedule") or [])),
    }


def build_matrix(document: Mapping[str, Any], strings: Strings) -> Matrix:
    """Columns, rows in the campaign's order (its baselines, then its cells), each cell's
    state and panel data, planned cells that never ran, and skipped rows."""
    cells: list[Mapping[str, Any]] = list(document.get("cells") or [])
    plan = read_planned(document)
    no_crash = no_crash_rows(document)
    columns, groups = columns_of(cells, plan, no_crash)
    col_index = {c.key: n for n, c in enumerate(columns)}
    rows = _Rows(document, plan, len(columns))
    matrix = Matrix(columns, groups, [], [], [], [], {}, plan)
    for cell in cells:
        if row_of(cell) in no_crash:
            _add_cell(matrix, rows(cell), cell, col_index[NO_CRASH_KEY], strings, no_crash=True)
            continue
        slot = col_index["+".join(str(p) for p in cell.get("schedule") or [])]
        _add_cell(matrix, rows(cell), cell, slot, strings)
    if document.get("interrupted"):  # a row whose baseline ran is drawn, cells or not
        for b in document.get("baselines") or []:
            if isinstance(b, Mapping):
                rows(b)
    for key, in_plan in (plan or {}).items():  # every planned row is drawn, run or not
        row = rows(dict(zip(ROW_FIELDS, key, strict=True)))
        if in_plan is None:
            row.unplanned = True
            continue
        for text in in_plan:
            if key in no_crash:  # its one cell, not run: where it would have been drawn
                slot, text = col_index[NO_CRASH_KEY], NO_CRASH
            else:
                slot = col_index[column_for(text.split("+")).key]
            if row.cells[slot] is None:
                row.cells[slot] = {"state": "nr", "schedule": visible(text)}
                row.not_run += 1
    for n in read_not_planned(document):  # drawn with the one cell that carries its failure
        row = rows(dict(zip(ROW_FIELDS, n.row, strict=True)))
        why, name, log = split_excerpt(n.why)
        row.not_planned = visible(f"its baseline failed, so {n.what()}: {why}")
        row.not_planned_log, row.not_planned_log_name = visible(log), visible(name)
    for item in document.get("skipped") or []:  # a skipped row names no store: the campaign's
        rows({"store": document.get("store", ""), **item}).skipped = visible(
            item.get("reason", "") or "skipped"
        )
    matrix.rows = rows.ordered()
    # Failing first, then low, then accepted; most severe first within each.
    matrix.listed.sort(key=lambda c: (LISTED[c["state"]], c["rank"], c["n"]))
    return matrix


__all__ = [
    "UNKNOWN_GLYPH",
    "VERDICTS",
    "Column",
    "Group",
    "Matrix",
    "Row",
    "build_matrix",
    "column_for",
    "columns_of",
    "state_of",
]
