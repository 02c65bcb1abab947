"""The HTML crash-matrix report: one self-contained file rendered from the campaign's JSON.

`render_report(document)` builds a view model (`build_view`) and renders
`templates/report.html.j2` with Jinja2, autoescape on. The matrix itself is server-rendered
HTML; each cell's evidence travels as one JSON data block (`|tojson`, so `<`, `>`, `&` and
`'` are \\u-escaped and `</script>` cannot occur) that the page's script shows with
`textContent` only. A Content-Security-Policy allows no script but the page's own (by hash).

Run content is made visible, never interpreted: control characters (ANSI escapes, NUL, BEL)
are written out as `\x1b`, `\x00`, `\r`, bidirectional overrides become `<U+202E>`-style
markers, and lone surrogates become U+FFFD. Size: every long string is stored once in a
string table, stderr tails and timelines are clipped (more for expected cells), so 2,000
cells stay well under 5 MB.
"""

from __future__ import annotations

import base64
import hashlib
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from killpoint import kinds
from killpoint.errors import PointError, ReportError
from killpoint.report.planned import ROW_FIELDS, read_planned
from killpoint.report.redact import redact, redact_tree
from killpoint.report.text import FIELD_LIMIT, as_float, clip_head, clip_tail, number, visible
from killpoint.values.findings import KINDS as FINDING_KINDS
from killpoint.values.findings import RANK, SEVERITIES, deciding_data
from killpoint.values.findings import VERDICTS as VERDICT_LIST
from killpoint.values.points import CrashPoint
from killpoint.values.sentences import count
from killpoint.values.timeline import KINDS, event_from_json

TEMPLATE = "report.html.j2"
TEMPLATES = Path(__file__).parent / "templates"
ASSETS = {"script": ("report.js", "</script"), "style": ("report.css", "</style")}

# verdict: (glyph, meaning), most severe first (killpoint.values.findings)
VERDICTS: dict[str, tuple[str, str]] = {v.name: (v.glyph, v.meaning) for v in VERDICT_LIST}
UNKNOWN_GLYPH = "•"
KIND_MEANINGS: dict[str, str] = {k.name: k.meaning for k in kinds.REGISTRY.values()}

# Clipping: what an expected cell keeps is smaller; the JSON always has everything.
STDERR_CHARS = {"unexpected": 4000, "expected": 1200}
TIMELINE_EVENTS = 120  # the first and last half are kept
TEXT_CHARS = 4000  # detail, first difference values
FINDINGS = 50  # findings shown per cell
EVIDENCE_LINES = 60  # ledger lines, store rows per finding
DIFF_LEAVES = 200  # leaves of the whole-session difference
DIFF_CHARS = 600  # per value there
LINK_SCHEMES = ("https://", "http://")  # an accepted entry's link becomes a link only then

# -- columns ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Column:
    key: str  # the full schedule string, "after-checkpoint:2" or "after-checkpoint:2+mid-model:1"
    group: str  # the kinds, "after-checkpoint" or "after-checkpoint → mid-model"
    label: str  # what the header cell shows under its group: "2", "1:0", "2+1"
    sort: tuple[Any, ...]
    starts_group: bool = False

    @property
    def title(self) -> str:
        return visible(self.key)


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


# -- view model ------------------------------------------------------------------------------


class Strings:
    """A string table: every distinct text once; cells refer to it by index."""

    def __init__(self) -> None:
        self.items: list[str] = []
        self._index: dict[str, int] = {}

    def __call__(self, text: str | None) -> int | None:
        if text is None:
            return None
        found = self._index.get(text)
        if found is None:
            found = self._index[text] = len(self.items)
            self.items.append(text)
        return found


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


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{seconds:.1f} s"
    minutes, secs = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {secs:02d} s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours} h {minutes:02d} min"


def _main_difference(cell: Mapping[str, Any]) -> dict[str, Any] | None:
    """The values of the finding that set the verdict; none for a cell without one (an `ok`
    cell has no deciding difference, whatever its allowed findings hold)."""
    f = deciding_data(cell.get("findings") or [])
    if f is None or (f.get("expected_value") is None and f.get("actual_value") is None):
        return None
    found = {
        "path": f.get("path", ""),
        "baseline": f.get("expected_value"),
        "actual": f.get("actual_value"),
    }
    sides = f.get("sides")
    if isinstance(sides, list | tuple) and len(sides) == 2:
        found["sides"] = [str(sides[0]), str(sides[1])]
    return found


@lru_cache(maxsize=4096)
def describe(point: str) -> str:
    """A crash point in words with its own numbers, from its kind ("checkpoint 1 has landed,
    2 has not"); empty for a point this version does not know."""
    try:
        parsed = kinds.parse_point(point)
        return kinds.get(parsed.kind).describe(parsed)
    except (PointError, LookupError, ValueError):
        return ""


def _lines(value: Any, limit: int) -> str:
    """Evidence lines as one text, at most `limit` of them."""
    items = [visible(x) for x in value] if isinstance(value, list | tuple) else [visible(value)]
    if len(items) > limit:
        items = [
            *items[:limit],
            f"… {count(len(items) - limit, 'more line')} (the JSON has them all)",
        ]
    return clip_head("\n".join(items), TEXT_CHARS)


def _finding_data(f: Mapping[str, Any], strings: Strings) -> dict[str, Any]:
    """One finding for the panel: kind, severity, sentence, where, and its evidence."""
    data: dict[str, Any] = {
        "k": visible(f.get("kind", "")),
        "s": visible(f.get("severity", "")),
        "t": strings(clip_head(visible(f.get("sentence", "")), TEXT_CHARS)),
        "x": bool(f.get("expected")),
        "p": strings(visible(f.get("path") or "")),
    }
    if f.get("tool") is not None:
        data["tool"] = strings(visible(f["tool"]))
    if f.get("evidence"):
        data["ev"] = strings(_lines(f["evidence"], EVIDENCE_LINES))
    for key, short in (("expected_value", "ex"), ("actual_value", "ac")):
        if f.get(key) is not None:
            data[short] = strings(clip_head(visible(f[key]), TEXT_CHARS))
    if f.get("accepted"):
        data["a"] = strings(visible(f["accepted"]))
    sides = f.get("sides")
    if isinstance(sides, list | tuple) and len(sides) == 2:
        data["sd"] = [visible(sides[0]), visible(sides[1])]
    return data


def _whole_diff(diff: Any, strings: Strings) -> tuple[list[list[int | None]], int]:
    """The whole-session difference, leaf by leaf ([path, expected, actual] as strings)."""
    leaves = [d for d in diff if isinstance(d, Mapping)] if isinstance(diff, list) else []
    shown = [
        [
            strings(visible(d.get("path", ""))),
            strings(clip_head(visible(d.get("expected")), DIFF_CHARS)),
            strings(clip_head(visible(d.get("actual")), DIFF_CHARS)),
        ]
        for d in leaves[:DIFF_LEAVES]
    ]
    return shown, len(leaves) - len(shown)


def _cell_data(cell: Mapping[str, Any], strings: Strings) -> dict[str, Any]:
    """What the detail panel shows for one cell, with long texts in the string table."""
    expected = bool(cell.get("expected", False))
    stderr, stderr_full = clip_tail(
        visible(cell.get("stderr_tail") or ""),
        STDERR_CHARS["expected" if expected else "unexpected"],
    )
    timeline = [event_from_json(e) for e in cell.get("timeline") or []]
    omitted = 0
    if len(timeline) > TIMELINE_EVENTS:
        half = TIMELINE_EVENTS // 2
        omitted = len(timeline) - TIMELINE_EVENTS
        timeline = timeline[:half] + timeline[-half:]
    diff = _main_difference(cell)
    store = cell.get("store_at_crash")
    findings = [f for f in cell.get("findings") or [] if isinstance(f, Mapping)]
    raw_sides = cell.get("sides")
    sides: Mapping[str, Any] = raw_sides if isinstance(raw_sides, Mapping) else {}
    whole, whole_more = _whole_diff(cell.get("diff"), strings)
    schedule = [str(p) for p in cell.get("schedule") or []]
    data: dict[str, Any] = {
        "id": strings(visible(cell.get("id", ""))),
        "schedule": [visible(p) for p in schedule],
        "says": [strings(visible(describe(p))) for p in schedule],
        "verdict": visible(cell.get("verdict", "")),
        "expected": expected,
        "accepted": bool(cell.get("accepted")) and not expected,
        "duplicates": number(cell.get("duplicates") or 0),
        "bound": number(cell.get("bound") or 0),
        "seconds": number(cell.get("seconds") or 0),
        "detail": strings(clip_head(visible(cell.get("detail") or ""), TEXT_CHARS)),
        "diff": None,
        "store": None,
        "stderr": strings(stderr),
        "stderr_full": stderr_full,
        "timeline": [
            [
                round(e.t, 4),
                strings(visible(e.text)),
                e.kind if e.kind in KINDS else "other",
                visible(e.lane)[:40],
            ]
            for e in timeline
        ],
        "omitted": omitted,
        "exit_codes": [c if isinstance(c, int) else None for c in cell.get("exit_codes") or []],
        "replay": strings(visible(cell.get("replay") or "")),
        "kept": strings(visible(cell["kept"])) if cell.get("kept") else None,
        "findings": [_finding_data(f, strings) for f in findings[:FINDINGS]],
        "findings_more": max(0, len(findings) - FINDINGS),
        "sides": [
            visible(sides.get("expected", "baseline")),
            visible(sides.get("actual", "resumed")),
        ],
        "whole": whole,
        "whole_more": whole_more,
    }
    if isinstance(diff, Mapping):
        data["diff"] = {
            "path": strings(visible(diff.get("path", ""))),
            "baseline": strings(clip_head(visible(diff.get("baseline")), TEXT_CHARS)),
            "actual": strings(clip_head(visible(diff.get("actual")), TEXT_CHARS)),
        }
        if diff.get("sides"):
            data["diff"]["sides"] = [visible(x) for x in diff["sides"]]
    if isinstance(store, Mapping):
        runs = store.get("runs") or []
        data["store"] = {
            "checkpoints": number(store.get("checkpoints")),
            "runs": [
                {visible(k): number(v) for k, v in run.items()}
                for run in runs
                if isinstance(run, Mapping)
            ],
        }
        cut = _cut_data(store.get("power_cut"), strings)
        if cut is not None:  # a power-loss cell: what each file kept at the cut
            data["store"]["cut"] = cut
    return data


CUT_COLUMNS = ("entry", "synced_bytes", "lost_bytes", "live_bytes", "syncs", "torn_bytes")


def _cut_data(cut: Any, strings: Strings) -> dict[str, Any] | None:
    """A power cut's evidence (killpoint.powerloss.CutReport.to_json): what each file kept."""
    if not isinstance(cut, Mapping):
        return None
    raw_files = cut.get("files")
    files: Mapping[str, Any] = raw_files if isinstance(raw_files, Mapping) else {}
    raw_ops = cut.get("ops")
    ops = [o for o in raw_ops if isinstance(o, Mapping)] if isinstance(raw_ops, list) else []
    return {
        "synced": number(cut.get("synced_bytes")),
        "lost": number(cut.get("lost_bytes")),
        "files": [
            [strings(visible(path)), *(number(f.get(k)) for k in CUT_COLUMNS)]
            for path, f in sorted(files.items())
            if isinstance(f, Mapping)
        ],
        # The cut model (reports from before cut models have none: synced).
        "model": strings(visible(cut.get("cut") or "synced")),
        "landed": [strings(visible(_op_line(o))) for o in ops if o.get("fate") != "dropped"][
            :CUT_OPS_SHOWN
        ],
    }


CUT_OPS_SHOWN = 50  # the operations a cut model kept or tore, listed in the panel


def _op_line(op: Mapping[str, Any]) -> str:
    """One unsynced operation a cut model kept or tore (cut_report.OpReport's words)."""
    where = str(op.get("path"))
    if op.get("op") == "write":
        where += f" @{op.get('offset')}+{op.get('length')}"
    elif op.get("op") == "truncate":
        where += f" to {op.get('length')}"
    torn = f" (first {op.get('kept')} bytes)" if op.get("fate") == "torn" else ""
    return f"#{op.get('seq')} {op.get('op')} {where}: {op.get('fate')}{torn}"


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


def _link(value: Any) -> str:
    """An accepted entry's link, when it is a web address (anything else stays text)."""
    text = visible(value or "")
    ok = text.lower().startswith(LINK_SCHEMES) and not re.search(r"[\s\"'<>`]", text)
    return text if ok else ""


def _groups(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The document's finding groups; grouped here for a document written before groups."""
    found = document.get("groups")
    if isinstance(found, list):
        return [g for g in found if isinstance(g, Mapping)]
    from killpoint.judge.groups import group_findings
    from killpoint.values.cell import CellResult

    try:
        results = [CellResult.from_json(dict(c)) for c in document.get("cells") or []]
        return [g.to_json() for g in group_findings(results)]
    except (ValueError, TypeError, KeyError, AttributeError):
        return []


def _groups_view(
    groups: Sequence[Mapping[str, Any]], by_id: Mapping[str, list[int]], strings: Strings
) -> tuple[list[dict[str, Any]], list[list[int]]]:
    """Each finding group as the page shows it, and the cells (data indices) of each."""
    shown: list[dict[str, Any]] = []
    members: list[list[int]] = []
    for g in groups:
        kind = str(g.get("kind", ""))
        verdict = str(g.get("verdict", ""))
        ids = [str(c) for c in g.get("cells") or []]
        cells = sorted({n for cell_id in ids for n in by_id.get(cell_id, [])})
        example = by_id.get(str(g.get("example_cell", "")), [])
        meaning = FINDING_KINDS[kind].meaning if kind in FINDING_KINDS else g.get("meaning", "")
        count = g.get("count", len(ids))
        shown.append(
            {
                "g": len(shown),
                "raw_key": str(g.get("key", "")),
                "key": visible(g.get("key", "")),
                "kind": visible(kind),
                "meaning": visible(meaning or ""),
                "tool": visible(g["tool"]) if g.get("tool") else "",
                "path": visible(g.get("path") or ""),
                "severity": visible(g.get("severity", "")),
                "sev_class": str(g.get("severity")) if g.get("severity") in SEVERITIES else "",
                "verdict": verdict if verdict in VERDICTS else "unknown",
                "verdict_text": visible(verdict),
                "glyph": VERDICTS.get(verdict, (UNKNOWN_GLYPH, ""))[0],
                "count": number(count),
                "example": clip_head(visible(g.get("example") or ""), 600),
                "example_cell": visible(g.get("example_cell", "")),
                "example_n": example[0] if example else None,
                "replay": visible(g.get("replay") or ""),
                "accepted": visible(g["accepted"]) if g.get("accepted") else "",
                "failing": verdict != "ok" and not g.get("accepted"),
            }
        )
        members.append(cells)
    return shown, members


def _without_crash_view(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Row-level groups (found in the uninterrupted runs), as the page shows them."""
    found = document.get("without_crash")
    shown: list[dict[str, Any]] = []
    for g in found if isinstance(found, list) else []:
        if not isinstance(g, Mapping):
            continue
        kind = str(g.get("kind", ""))
        verdict = str(g.get("verdict", ""))
        rows = [visible(r) for r in g.get("rows") or []]
        meaning = FINDING_KINDS[kind].meaning if kind in FINDING_KINDS else g.get("meaning", "")
        shown.append(
            {
                "key": visible(g.get("key", "")),
                "raw_key": str(g.get("key", "")),
                "kind": visible(kind),
                "meaning": visible(meaning or ""),
                "tool": visible(g["tool"]) if g.get("tool") else "",
                "path": visible(g.get("path") or ""),
                "severity": visible(g.get("severity", "")),
                "sev_class": str(g.get("severity")) if g.get("severity") in SEVERITIES else "",
                "verdict": verdict if verdict in VERDICTS else "unknown",
                "verdict_text": visible(verdict),
                "glyph": VERDICTS.get(verdict, (UNKNOWN_GLYPH, ""))[0],
                "rows": rows,
                "example": clip_head(visible(g.get("example") or ""), 600),
                "example_row": visible(g.get("example_row", "")),
                "replay": visible(g.get("replay") or ""),
                "accepted": visible(g["accepted"]) if g.get("accepted") else "",
                "failing": verdict != "ok" and not g.get("accepted"),
            }
        )
    return shown


def build_view(document: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the template shows, computed once; all run content passed through `visible`."""
    cells: list[Mapping[str, Any]] = list(document.get("cells") or [])
    skipped: list[Mapping[str, Any]] = list(document.get("skipped") or [])
    modes = [str(m) for m in document.get("modes") or []]

    # The plan, when the document keeps it: a planned cell that has no result is "not run",
    # and a planned column with no result at all is still drawn.
    plan = read_planned(document)
    columns_by_key: dict[str, Column] = {}
    every = [[str(p) for p in cell.get("schedule") or []] for cell in cells]
    every += [s.split("+") for row in (plan or {}).values() for s in row or ()]
    for points in every:
        col = column_for(points)
        columns_by_key.setdefault(col.key, col)
    columns: list[Column] = []
    groups: list[Group] = []
    for col in sorted(columns_by_key.values(), key=lambda c: c.sort):
        if groups and groups[-1].label == col.group:
            groups[-1].span += 1
            columns.append(col)
        else:
            title = " → ".join(KIND_MEANINGS.get(k, "") for k in col.group.split(" → "))
            groups.append(Group(visible(col.group), 1, title))
            columns.append(replace(col, starts_group=True))
    col_index = {c.key: n for n, c in enumerate(columns)}

    # Rows in the campaign's order: its baselines (the order it was given), then the cells.
    everything = [
        *(dict(zip(ROW_FIELDS, row, strict=True)) for row in plan or {}),
        *(document.get("baselines") or []),
        *cells,
        *({"store": document.get("store", ""), **s} for s in skipped),
    ]
    orders = [
        _order(str(c.get("runtime", "")) for c in everything),
        _order(str(c.get("scenario", "")) for c in everything),
        _order((str(c.get("mode", "")) for c in everything), modes),
        _order(str(c.get("store", "")) for c in everything),
    ]
    mode_names = list(orders[2])

    rows: dict[tuple[str, ...], Row] = {}

    def row_for(item: Mapping[str, Any]) -> Row:
        key = tuple(str(item.get(k, "")) for k in ("runtime", "scenario", "mode", "store"))
        if key not in rows:
            runtime, scenario, mode, store = (visible(k) for k in key)
            sort = tuple(order[k] for order, k in zip(orders, key, strict=True))
            rows[key] = Row(
                runtime,
                scenario,
                mode,
                store,
                sort,
                mode_names.index(key[2]),
                [None] * len(columns),
            )
        return rows[key]

    strings = Strings()
    data: list[dict[str, Any]] = []
    missed: list[dict[str, Any]] = []
    listed: list[dict[str, Any]] = []  # the unexpected cells, for the list view
    by_id: dict[str, list[int]] = {}
    for cell in cells:
        row = row_for(cell)
        verdict = str(cell.get("verdict", ""))
        expected = bool(cell.get("expected", False))
        accepted = bool(cell.get("accepted")) and not expected
        state = "e" if expected else "a" if accepted else "x"
        schedule = "+".join(str(p) for p in cell.get("schedule") or [])
        n = len(data)
        data.append(_cell_data(cell, strings))
        by_id.setdefault(str(cell.get("id", "")), []).append(n)
        row.count += 1
        row.unexpected += state == "x"
        row.accepted += state == "a"
        if verdict == "missed":
            missed.append({"n": n, "id": visible(cell.get("id", ""))})
        if not expected:
            first = str((cell.get("schedule") or [""])[0])
            listed.append(
                {
                    "n": n,
                    "verdict": verdict if verdict in VERDICTS else "unknown",
                    "verdict_text": visible(verdict),
                    "glyph": VERDICTS.get(verdict, (UNKNOWN_GLYPH, ""))[0],
                    "rank": RANK.get(verdict, len(RANK)),
                    "state": state,
                    "kind": _deciding_kind(cell),
                    "kinds": _open_kinds(cell),
                    "point_kind": visible(first.split(":", 1)[0]),
                    "schedule": visible(schedule),
                    "says": visible(describe(first)),
                    "runtime": row.runtime,
                    "scenario": row.scenario,
                    "mode": row.mode,
                    "store": row.store,
                    "detail": clip_head(visible(cell.get("detail") or ""), 240),
                }
            )
        slot = col_index[schedule]
        worse = {"e": 0, "a": 1, "x": 2}
        shown = row.cells[slot]
        if shown is not None and worse[state] <= worse[shown["state"]]:
            continue  # the same cell twice (merged results): the matrix shows the worse one
        row.cells[slot] = {
            "n": n,
            "verdict": verdict if verdict in VERDICTS else "unknown",
            "verdict_text": visible(verdict),
            "glyph": VERDICTS.get(verdict, (UNKNOWN_GLYPH, ""))[0],
            "expected": expected,
            "state": state,
            "duplicates": number(cell.get("duplicates") or 0),
            "schedule": visible(schedule),
        }
    if document.get("interrupted"):  # a row whose baseline ran is drawn, cells or not
        for b in document.get("baselines") or []:
            if isinstance(b, Mapping):
                row_for(b)
    for key, in_plan in (plan or {}).items():  # every planned row is drawn, run or not
        row = row_for(dict(zip(ROW_FIELDS, key, strict=True)))
        if in_plan is None:
            row.unplanned = True
            continue
        for text in in_plan:
            slot = col_index[column_for(text.split("+")).key]
            if row.cells[slot] is None:
                row.cells[slot] = {"state": "nr", "schedule": visible(text)}
                row.not_run += 1
    for item in skipped:  # a skipped row names no store: the campaign's
        row_for({"store": document.get("store", ""), **item}).skipped = visible(
            item.get("reason", "") or "skipped"
        )

    ordered = sorted(rows.values(), key=lambda r: r.sort)
    for before, row in zip([None, *ordered], ordered, strict=False):
        row.first_of_scenario = before is None or before.sort[:2] != row.sort[:2]
    summary = dict(document.get("summary") or {})
    by_verdict = {str(k): int(as_float(v)) for k, v in (summary.get("by_verdict") or {}).items()}
    total = sum(by_verdict.values()) or 1
    runtimes = list(dict.fromkeys(r.runtime for r in ordered))
    stores = list(dict.fromkeys(r.store for r in ordered))
    row_modes = list(dict.fromkeys(r.mode for r in sorted(ordered, key=lambda r: r.sort[2])))
    planned = number(summary.get("planned"))
    n_cells = number(summary.get("cells", len(cells)))
    accepted_cells = sum(1 for c in cells if c.get("accepted") and not c.get("expected"))
    unexpected = number(
        summary.get(
            "unexpected",
            sum(1 for c in cells if not c.get("expected", False) and not c.get("accepted")),
        )
    )
    seconds = as_float(summary.get("seconds"))
    groups_view, group_cells = _groups_view(_groups(document), by_id, strings)
    accepted_file = document.get("accepted")
    accepted_file = accepted_file if isinstance(accepted_file, Mapping) else {}
    met = {g["raw_key"]: g for g in groups_view}
    without_crash = _without_crash_view(document)
    rows_met = {g["raw_key"]: len(g["rows"]) for g in without_crash}
    accepted_view = [
        {
            "key": visible(key),
            "reason": visible(entry.get("reason", "") if isinstance(entry, Mapping) else ""),
            "link": visible(entry.get("link", "") if isinstance(entry, Mapping) else ""),
            "href": _link(entry.get("link") if isinstance(entry, Mapping) else ""),
            "group": met[key]["g"] if key in met else None,
            "count": met[key]["count"] if key in met else 0,
            "rows": rows_met.get(key, 0),
            # What a campaign that did not meet it says: "not exercised" unless it was whole.
            "status": visible(
                (entry.get("this_campaign") if isinstance(entry, Mapping) else None)
                or ("no longer occurs" if not document.get("narrowed") else "not exercised")
            ),
        }
        for key, entry in accepted_file.items()
    ]

    return {
        "title": f"killpoint crash matrix — {visible(document.get('runtime', ''))}",
        "schema": visible(document.get("schema", "")),
        "command": visible(redact(str(document.get("command", "")))),
        "seed": visible(document.get("seed", "")),
        "runtime": visible(document.get("runtime", "")),
        "store": visible(document.get("store", "")),
        "modes": [visible(m) for m in modes],
        "points": visible(document.get("points", "")),
        "depth": visible(document.get("depth", "")),
        "versions": [(visible(k), visible(v)) for k, v in (document.get("versions") or {}).items()],
        "interrupted": bool(document.get("interrupted")),
        # Rows with no cell run: an interrupt came first (before their baselines ended, or
        # before their first cell did).
        "unstarted": [
            " / ".join((r.scenario, r.mode, r.store))
            for r in ordered
            if not r.count and not r.skipped and (r.unplanned or r.not_run or plan is None)
        ],
        "has_plan": plan is not None,
        "not_run": sum(r.not_run for r in ordered),
        "unplanned": sum(1 for r in ordered if r.unplanned and not r.count),
        "cells": n_cells,
        "planned": planned,
        "unexpected": unexpected,
        "accepted_cells": number(summary.get("accepted", accepted_cells)),
        "show_accepted": bool(accepted_cells or accepted_file or summary.get("accepted")),
        "finding_groups": groups_view,
        "failing_groups": sum(1 for g in groups_view if g["failing"]),
        "accepted_entries": accepted_view,
        "unmet": [a for a in accepted_view if a["group"] is None and not a["rows"]],
        "narrowed": visible(document.get("narrowed") or ""),
        "without_crash": without_crash,
        "failing_rows": sum(1 for g in without_crash if g["failing"]),
        "listed": sorted(listed, key=lambda c: (c["state"] != "x", c["rank"], c["n"])),
        "point_kinds": [
            {"name": k.name, "label": k.label, "meaning": k.meaning}
            for k in kinds.REGISTRY.values()
        ],
        "finding_kinds": [
            {"name": k.name, "verdict": k.verdict, "severity": k.severity, "meaning": k.meaning}
            for k in FINDING_KINDS.values()
        ],
        "expected_losses": number(summary.get("expected_losses", 0)),
        "duplicates": number(summary.get("duplicates", 0)),
        "missed_count": number(summary.get("missed", len(missed))),
        "missed": missed,
        "seconds": _duration(seconds),
        "cells_per_second": number(summary.get("cells_per_second", 0)),
        "by_verdict": [
            {
                "verdict": v if v in VERDICTS else "unknown",
                "text": visible(v),
                "count": count,
                "percent": round(100 * count / total, 2),
                "glyph": VERDICTS.get(v, (UNKNOWN_GLYPH, ""))[0],
            }
            for v, count in sorted(
                by_verdict.items(),
                key=lambda kv: list(VERDICTS).index(kv[0]) if kv[0] in VERDICTS else 99,
            )
        ],
        "verdicts": [{"verdict": v, "glyph": g, "meaning": m} for v, (g, m) in VERDICTS.items()],
        "columns": columns,
        "groups": groups,
        "rows": ordered,
        "runtimes": runtimes,
        "row_modes": row_modes,
        "stores": stores,
        "show_runtime": len(runtimes) > 1,
        "show_store": len(stores) > 1,
        "skipped": [
            {k: visible(item.get(k, "")) for k in ("runtime", "scenario", "mode", "reason")}
            for item in skipped
        ],
        "baselines": [
            {
                "runtime": visible(b.get("runtime", "")),
                "scenario": visible(b.get("scenario", "")),
                "mode": visible(b.get("mode", "")),
                "store": visible(b.get("store", "")),
                "checkpoints": number(b.get("checkpoints")),
                "seconds": number(b.get("seconds")),
                "problem": visible(b["problem"]) if b.get("problem") else "",
                "nondeterministic": visible(b["nondeterministic"])
                if b.get("nondeterministic")
                else "",
                "trace_note": visible(b["trace_note"]) if b.get("trace_note") else "",
            }
            for b in document.get("baselines") or []
        ],
        "excluded": [visible(x) for x in document.get("excluded_from_comparison") or []],
        "data": {
            "strings": strings.items,
            "cells": data,
            "groups": group_cells,
            "verdicts": {v: g for v, (g, _) in VERDICTS.items()},
        },
    }


# -- rendering -------------------------------------------------------------------------------


def _csp_hash(script: str) -> str:
    digest = hashlib.sha256(str(script).encode("utf-8")).digest()
    return "sha256-" + base64.b64encode(digest).decode("ascii")


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(TEMPLATES),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    # `|tojson` escapes <, >, & and ' as \u escapes; the text is already free of surrogates.
    env.policies["json.dumps_kwargs"] = {"ensure_ascii": False, "separators": (",", ":")}
    env.filters["csp_hash"] = _csp_hash
    return env


@lru_cache(maxsize=1)
def assets() -> dict[str, Markup]:
    """The page's script and style sheet (templates/report.js and report.css, files of
    their own so that linters and editors read them), inlined whole: the page stays one
    file, and the Content-Security-Policy names the script by its hash."""
    found = {}
    for name, (file, closing) in ASSETS.items():
        text = (TEMPLATES / file).read_text(encoding="utf-8")
        if closing in text.lower():
            raise ReportError(f"killpoint: {file} holds {closing!r}, which would end its element")
        found[name] = Markup(text)  # our own files, never run content
    return found


def render_report(
    document: Mapping[str, Any],
    *,
    diff_base: Mapping[str, Any] | None = None,
    diff_base_name: str = "the base report",
) -> str:
    """The report as one self-contained HTML page, from the document with every secret
    masked before anything in it is escaped; `diff_base`: an earlier report, whose
    differences (killpoint.report.diff) the page shows above the groups."""
    from killpoint.report.diff_view import diff_view

    document = redact_tree(document, limit=FIELD_LIMIT)
    view = build_view(document)
    view["diff"] = (
        diff_view(redact_tree(diff_base, limit=FIELD_LIMIT), document, diff_base_name)
        if diff_base is not None
        else None
    )
    return environment().get_template(TEMPLATE).render(view=view, **assets())
