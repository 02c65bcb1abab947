"""What a cell's panel in the HTML report shows, as the page's data block holds it.

Every long text goes once into a string table (`Strings`); a cell refers to it by index.
Size is the report's limit (5 MB on the whole default matrix), so the data is compact: a
timeline event is `[milliseconds, text, kind, lane]` with the kind an index into the
page's list of event kinds and the lane a string index; a field at its default (not
expected, no duplicates, nothing clipped) is left out; an expected cell keeps fewer events
and less stderr than an unexpected one. The JSON always has everything.

One story per panel: the sides named are the sides each finding compared (`compared`),
never only the cell's last comparison; the timeline, the ledger's lines and the evidence
are on the cell's one clock (the engine writes them so).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

from killpoint import kinds
from killpoint.errors import PointError
from killpoint.report.planned import NO_CRASH, NO_CRASH_MEANS, row_of, shown_cell
from killpoint.report.text import clip_head, clip_tail, number, visible
from killpoint.values.findings import deciding_data, fails, open_severity
from killpoint.values.sentences import count
from killpoint.values.timeline import KINDS, event_from_json

# Clipping: what an expected cell keeps is smaller; the JSON always has everything.
STDERR_CHARS = {"unexpected": 4000, "expected": 1200}
TIMELINE_EVENTS = {"unexpected": 120, "expected": 40}  # the first and last half are kept
TEXT_CHARS = 4000  # detail, first difference values
FINDINGS = 50  # findings shown per cell
EVIDENCE_LINES = 60  # ledger lines, store rows per finding
DIFF_LEAVES = 200  # leaves of the whole-session difference
DIFF_CHARS = 600  # per value there
EVENT_KINDS = list(KINDS)  # a timeline event's kind, by its index in the data block


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


@lru_cache(maxsize=4096)
def describe(point: str) -> str:
    """A crash point in words with its own numbers, from its kind ("checkpoint 1 has landed,
    2 has not"); empty for a point this version does not know."""
    try:
        parsed = kinds.parse_point(point)
        return kinds.get(parsed.kind).describe(parsed)
    except (PointError, LookupError, ValueError):
        return ""


def main_difference(cell: Mapping[str, Any]) -> dict[str, Any] | None:
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


def _lines(value: Any, limit: int) -> str:
    """Evidence lines as one text, at most `limit` of them."""
    items = [visible(x) for x in value] if isinstance(value, list | tuple) else [visible(value)]
    if len(items) > limit:
        items = [
            *items[:limit],
            f"… {count(len(items) - limit, 'more line')} (the JSON has them all)",
        ]
    return clip_head("\n".join(items), TEXT_CHARS)


def finding_data(f: Mapping[str, Any], strings: Strings) -> dict[str, Any]:
    """One finding for the panel: kind, severity, sentence, where, and its evidence."""
    data: dict[str, Any] = {
        "k": visible(f.get("kind", "")),
        "s": visible(f.get("severity", "")),
        "t": strings(clip_head(visible(f.get("sentence", "")), TEXT_CHARS)),
    }
    if f.get("expected"):
        data["x"] = True
    if f.get("path"):
        data["p"] = strings(visible(f["path"]))
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


def compared(cell: Mapping[str, Any]) -> list[list[Any]]:
    """The sides each of the cell's findings compared, each pair once with the kinds that
    compared it: `[[expected side, actual side, [kinds]], ...]`. A finding without sides
    of its own but with values compared the cell's two sides; one with neither compared
    nothing (a contract check, a count)."""
    raw = cell.get("sides")
    own: Mapping[str, Any] = raw if isinstance(raw, Mapping) else {}
    default = (visible(own.get("expected", "baseline")), visible(own.get("actual", "resumed run")))
    pairs: dict[tuple[str, str], list[str]] = {}
    for f in cell.get("findings") or []:
        if not isinstance(f, Mapping):
            continue
        sides = f.get("sides")
        if isinstance(sides, list | tuple) and len(sides) == 2:
            pair = (visible(sides[0]), visible(sides[1]))
        elif f.get("expected_value") is not None or f.get("actual_value") is not None:
            pair = default
        else:
            continue
        kind = visible(f.get("kind", ""))
        if kind not in pairs.setdefault(pair, []):
            pairs[pair].append(kind)
    return [[a, b, found] for (a, b), found in pairs.items()]


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


def _timeline(cell: Mapping[str, Any], strings: Strings, limit: int) -> tuple[list[Any], int]:
    """The events as `[ms, text, kind, lane]`, at most `limit` (the first and last half);
    how many were left out."""
    events = [event_from_json(e) for e in cell.get("timeline") or []]
    omitted = 0
    if len(events) > limit:
        half = limit // 2
        omitted = len(events) - limit
        events = events[:half] + events[-half:]
    other = EVENT_KINDS.index("other") if "other" in EVENT_KINDS else 0
    return [
        [
            round(e.t * 1000),
            strings(visible(e.text)),
            EVENT_KINDS.index(e.kind) if e.kind in EVENT_KINDS else other,
            strings(visible(e.lane)[:40]),
        ]
        for e in events
    ], omitted


def cell_data(
    cell: Mapping[str, Any], strings: Strings, *, no_crash: bool = False
) -> dict[str, Any]:
    """What the detail panel shows for one cell, with long texts in the string table and
    every field at its default left out. `no_crash`: the cell made no crash (its row's
    baseline failed): its point is shown as that (planned.NO_CRASH), never as the point
    its id keeps for replay, and the panel names it by its row (`shown`)."""
    expected = bool(cell.get("expected", False))
    state = "expected" if expected else "unexpected"
    stderr, stderr_full = clip_tail(visible(cell.get("stderr_tail") or ""), STDERR_CHARS[state])
    timeline, omitted = _timeline(cell, strings, TIMELINE_EVENTS[state])
    findings = [f for f in cell.get("findings") or [] if isinstance(f, Mapping)]
    raw_sides = cell.get("sides")
    sides: Mapping[str, Any] = raw_sides if isinstance(raw_sides, Mapping) else {}
    whole, whole_more = _whole_diff(cell.get("diff"), strings)
    schedule = [str(p) for p in cell.get("schedule") or []]
    says = [describe(p) for p in schedule]
    if no_crash:
        schedule, says = [NO_CRASH], [NO_CRASH_MEANS]
    data: dict[str, Any] = {
        "id": strings(visible(cell.get("id", ""))),
        "schedule": [visible(p) for p in schedule],
        "says": [strings(visible(s)) for s in says],
        "verdict": visible(cell.get("verdict", "")),
        "seconds": number(cell.get("seconds") or 0),
        "timeline": timeline,
        "exit_codes": [c if isinstance(c, int) else None for c in cell.get("exit_codes") or []],
        "replay": strings(visible(cell.get("replay") or "")),
        "findings": [finding_data(f, strings) for f in findings[:FINDINGS]],
        "sides": [
            visible(sides.get("expected", "baseline")),
            visible(sides.get("actual", "resumed run")),
        ],
        "compared": compared(cell),
    }
    optional: dict[str, Any] = {
        "expected": expected,
        "accepted": bool(cell.get("accepted")) and not expected,
        # Unexpected, every unexpected finding low: shown, failing only under --fail-on low.
        "low": not expected
        and not cell.get("accepted")
        and not fails(open_severity(findings) or "high"),
        "duplicates": number(cell.get("duplicates") or 0),
        "bound": number(cell.get("bound") or 0),
        "detail": strings(clip_head(visible(cell.get("detail") or ""), TEXT_CHARS))
        if cell.get("detail")
        else None,
        "stderr": strings(stderr) if stderr else None,
        "stderr_full": stderr_full,
        "omitted": omitted,
        "kept": strings(visible(cell["kept"])) if cell.get("kept") else None,
        "findings_more": max(0, len(findings) - FINDINGS),
        "whole": whole,
        "whole_more": whole_more,
    }
    data.update({k: v for k, v in optional.items() if v})
    if no_crash:  # its id stays (the page's links, its replay command); this names it
        data["shown"] = strings(visible(shown_cell(cell.get("id", ""), [row_of(cell)])))
    diff = main_difference(cell)
    if isinstance(diff, Mapping):
        data["diff"] = {
            "path": strings(visible(diff.get("path", ""))),
            "baseline": strings(clip_head(visible(diff.get("baseline")), TEXT_CHARS)),
            "actual": strings(clip_head(visible(diff.get("actual")), TEXT_CHARS)),
        }
        if diff.get("sides"):
            data["diff"]["sides"] = [visible(x) for x in diff["sides"]]
    store = cell.get("store_at_crash")
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
CUT_OPS_SHOWN = 50  # the operations a cut model kept or tore, listed in the panel


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


def _op_line(op: Mapping[str, Any]) -> str:
    """One unsynced operation a cut model kept or tore (cut_report.OpReport's words)."""
    where = str(op.get("path"))
    if op.get("op") == "write":
        where += f" @{op.get('offset')}+{op.get('length')}"
    elif op.get("op") == "truncate":
        where += f" to {op.get('length')}"
    torn = f" (first {op.get('kept')} bytes)" if op.get("fate") == "torn" else ""
    return f"#{op.get('seq')} {op.get('op')} {where}: {op.get('fate')}{torn}"


__all__ = [
    "EVENT_KINDS",
    "STDERR_CHARS",
    "Strings",
    "cell_data",
    "compared",
    "describe",
    "finding_data",
    "main_difference",
]
