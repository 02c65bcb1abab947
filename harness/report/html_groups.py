"""The causes, the groups of findings, what happens without a crash, and the accepted
entries, as the HTML report shows them.

A cause (killpoint.judge.causes) is what a reader meets first: its name, its sentence, the
verdicts its cells have, and its groups as details, each a filter of the matrix. A group's
badge is the verdict its cells have (most of them, the others counted), never only the one
its kind names: an `acknowledged-lost` group of `corrupt` cells says `corrupt`.
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from killpoint.report.html_matrix import UNKNOWN_GLYPH, VERDICTS
from killpoint.report.planned import Row, shown_cell
from killpoint.report.text import cell_verdicts, clip_head, number, visible
from killpoint.values.findings import KINDS as FINDING_KINDS
from killpoint.values.findings import SEVERITIES

LINK_SCHEMES = ("https://", "http://")  # an accepted entry's link becomes a link only then
BY_DESIGN = "by design"  # how an accepted reason a runtime ships begins (--accept builtin)


def _link(value: Any) -> str:
    """An accepted entry's link, when it is a web address (anything else stays text)."""
    text = visible(value or "")
    ok = text.lower().startswith(LINK_SCHEMES) and not re.search(r"[\s\"'<>`]", text)
    return text if ok else ""


def _badges(verdicts: Any, fallback: str) -> list[dict[str, Any]]:
    """The verdicts a group's or cause's cells have, most cells first, as badges; the
    kind's own verdict when the document does not say (a row-level group, an old report)."""
    found = cell_verdicts(verdicts, fallback)
    return [
        {
            "verdict": str(v) if v in VERDICTS else "unknown",
            "text": visible(v),
            "glyph": VERDICTS.get(str(v), (UNKNOWN_GLYPH, ""))[0],
            "count": n,
        }
        for v, n in found.items()
    ]


def _accepted_chip(reason: str) -> str:
    return BY_DESIGN if reason.lower().startswith(BY_DESIGN) else "accepted"


def groups_of(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
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


def causes_of(document: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The document's causes; found here for a document written before causes."""
    found = document.get("causes")
    if isinstance(found, list):
        return [c for c in found if isinstance(c, Mapping)]
    from killpoint.judge.causes import find_causes
    from killpoint.values.cell import CellResult

    try:
        results = [CellResult.from_json(dict(c)) for c in document.get("cells") or []]
        return [c.to_json() for c in find_causes(results)]
    except (ValueError, TypeError, KeyError, AttributeError, LookupError):
        return []


def _failing(g: Mapping[str, Any]) -> bool:
    if "failing" in g:
        return bool(g["failing"])
    return g.get("verdict") != "ok" and not g.get("accepted")


def _meaning(kind: str, g: Mapping[str, Any]) -> str:
    return visible(FINDING_KINDS[kind].meaning if kind in FINDING_KINDS else g.get("meaning", ""))


def _group_fields(g: Mapping[str, Any]) -> dict[str, Any]:
    """What a group's entry shows, cells' or rows' alike."""
    kind = str(g.get("kind", ""))
    verdict = str(g.get("verdict", ""))
    accepted = visible(g["accepted"]) if g.get("accepted") else ""
    return {
        "raw_key": str(g.get("key", "")),
        "key": visible(g.get("key", "")),
        "kind": visible(kind),
        "meaning": _meaning(kind, g),
        "tool": visible(g["tool"]) if g.get("tool") else "",
        "path": visible(g.get("path") or ""),
        "severity": visible(g.get("severity", "")),
        "sev_class": str(g.get("severity")) if g.get("severity") in SEVERITIES else "",
        "badges": _badges(g.get("verdicts"), verdict),
        "example": clip_head(visible(g.get("example") or ""), 600),
        "replay": visible(g.get("replay") or ""),
        "accepted": accepted,
        "accepted_chip": _accepted_chip(accepted) if accepted else "",
        "failing": _failing(g),
    }


def groups_view(
    groups: Sequence[Mapping[str, Any]],
    by_id: Mapping[str, list[int]],
    no_crash: Collection[Row] = (),
) -> tuple[list[dict[str, Any]], list[list[int]]]:
    """Each finding group as the page shows it, and the cells (data indices) of each.
    `no_crash`: the rows whose cells made no crash (planned.no_crash_rows), whose example
    cell is named as its row (planned.shown_cell)."""
    shown: list[dict[str, Any]] = []
    members: list[list[int]] = []
    for g in groups:
        ids = [str(c) for c in g.get("cells") or []]
        example = by_id.get(str(g.get("example_cell", "")), [])
        shown.append(
            {
                **_group_fields(g),
                "g": len(shown),
                "count": number(g.get("count", len(ids))),
                "example_cell": visible(shown_cell(g.get("example_cell", ""), no_crash)),
                "example_n": example[0] if example else None,
            }
        )
        members.append(sorted({n for cell_id in ids for n in by_id.get(cell_id, [])}))
    return shown, members


def causes_view(
    causes: Sequence[Mapping[str, Any]],
    groups: Sequence[dict[str, Any]],
    by_id: Mapping[str, list[int]],
    first: int,
    no_crash: Collection[Row] = (),
) -> tuple[list[dict[str, Any]], list[list[int]]]:
    """Each cause as the page shows it (its filter index from `first`, after the groups'),
    its groups as details (each a filter too), and the cells of each; `no_crash` as
    groups_view's."""
    index = {g["raw_key"]: g for g in groups}
    shown: list[dict[str, Any]] = []
    members: list[list[int]] = []
    for c in causes:
        ids = [str(x) for x in c.get("cells") or []]
        example = by_id.get(str(c.get("example_cell", "")), [])
        accepted = visible(c["accepted"]) if c.get("accepted") else ""
        details = [
            {
                "key": visible(d.get("key", "")),
                "cells": d.get("cells", 0),
                "group": index[str(d.get("key"))]["g"] if str(d.get("key")) in index else None,
                "heading": _heading(index.get(str(d.get("key")))),
            }
            for d in c.get("groups") or []
            if isinstance(d, Mapping)
        ]
        shown.append(
            {
                "g": first + len(shown),
                "n": len(shown) + 1,
                "key": visible(c.get("key", "")),
                "name": visible(c.get("name", "")),
                "sentence": visible(c.get("sentence", "")),
                "severity": visible(c.get("severity", "")),
                "sev_class": str(c.get("severity")) if c.get("severity") in SEVERITIES else "",
                "badges": _badges(c.get("verdicts"), "unknown"),
                "count": len(ids),
                "failing_cells": c.get("failing_cells", 0),
                "low_cells": c.get("low_cells", 0),
                "rows": len(c.get("rows") or []),
                "points": [(visible(k), n) for k, n in (c.get("points") or {}).items()],
                "details": details,
                "example": clip_head(visible(c.get("example") or ""), 600),
                "example_cell": visible(shown_cell(c.get("example_cell", ""), no_crash)),
                "example_n": example[0] if example else None,
                "replay": visible(c.get("replay") or ""),
                "accepted": accepted,
                "accepted_chip": _accepted_chip(accepted) if accepted else "",
                "failing": bool(c.get("failing_cells")) and not accepted,
            }
        )
        members.append(sorted({n for cell_id in ids for n in by_id.get(cell_id, [])}))
    return shown, members


def _heading(g: Mapping[str, Any] | None) -> str:
    if g is None:
        return ""
    tool = f" (tool {g['tool']})" if g.get("tool") else ""
    where = f" at {g['path']}" if g.get("path") and g["path"] != "-" else ""
    return f"{g['kind']}{tool}{where}"


def without_crash_view(document: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Row-level groups (found in the uninterrupted runs), as the page shows them."""
    found = document.get("without_crash")
    return [
        {
            **_group_fields(g),
            "rows": [visible(r) for r in g.get("rows") or []],
            "example_row": visible(g.get("example_row", "")),
        }
        for g in (found if isinstance(found, list) else [])
        if isinstance(g, Mapping)
    ]


def accepted_view(
    document: Mapping[str, Any],
    groups: Sequence[dict[str, Any]],
    without_crash: Sequence[dict[str, Any]],
) -> list[dict[str, Any]]:
    """The accepted entries, each with what this campaign made of it."""
    from killpoint.judge.groups import Accepted, matching

    entries = document.get("accepted")
    entries = entries if isinstance(entries, Mapping) else {}
    shown = []
    for key, entry in entries.items():
        entry = entry if isinstance(entry, Mapping) else {}
        mine = {key: Accepted(key, "")}
        met = [g for g in groups if matching(g["raw_key"], mine) is not None]
        rows = sum(len(g["rows"]) for g in without_crash if matching(g["raw_key"], mine))
        status = entry.get("this_campaign") or (
            "no longer occurs" if not document.get("narrowed") else "not exercised"
        )
        shown.append(
            {
                "key": visible(key),
                "reason": visible(entry.get("reason", "")),
                "link": visible(entry.get("link", "")),
                "href": _link(entry.get("link")),
                "group": met[0]["g"] if len(met) == 1 else None,
                "met": bool(met),
                "count": sum(g["count"] for g in met if isinstance(g["count"], int)),
                "rows": rows,
                # What a campaign that did not meet it says: "not exercised" unless it was whole.
                "status": visible(status),
            }
        )
    return shown


__all__ = [
    "accepted_view",
    "causes_of",
    "causes_view",
    "groups_of",
    "groups_view",
    "without_crash_view",
]
