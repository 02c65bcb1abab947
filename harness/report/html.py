"""The HTML crash-matrix report: one self-contained file rendered from the campaign's JSON.

`render_report(document)` builds a view model (`build_view`: the matrix and its panels in
html_matrix and html_cells, the causes and groups in html_groups) and renders
`templates/report.html.j2` with Jinja2, autoescape on. The matrix itself is server-rendered
HTML; each cell's evidence travels as one JSON data block (`|tojson`, so `<`, `>`, `&` and
`'` are \\u-escaped and `</script>` cannot occur) that the page's script shows with
`textContent` only. A Content-Security-Policy allows no script but the page's own (by hash).

Run content is made visible, never interpreted: control characters (ANSI escapes, NUL, BEL)
are written out as `\x1b`, `\x00`, `\r`, bidirectional overrides become `<U+202E>`-style
markers, and lone surrogates become U+FFFD. Size: every long string is stored once in a
string table, a cell's data is compact and stderr tails and timelines are clipped (more
for expected cells), so the whole default matrix (2,211 cells) stays under 5 MB.
"""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from killpoint import kinds
from killpoint.errors import ReportError
from killpoint.report.html_cells import EVENT_KINDS, Strings
from killpoint.report.html_groups import (
    accepted_view,
    causes_of,
    causes_view,
    groups_of,
    groups_view,
    without_crash_view,
)
from killpoint.report.html_matrix import UNKNOWN_GLYPH, VERDICTS, Matrix, build_matrix
from killpoint.report.planned import no_crash_rows
from killpoint.report.redact import redact, redact_tree
from killpoint.report.terminal import stopped_lines
from killpoint.report.text import FIELD_LIMIT, as_float, number, visible
from killpoint.values.durations import duration
from killpoint.values.findings import KINDS as FINDING_KINDS

TEMPLATE = "report.html.j2"
TEMPLATES = Path(__file__).parent / "templates"
ASSETS = {"script": ("report.js", "</script"), "style": ("report.css", "</style")}


def _figures(document: Mapping[str, Any], m: Matrix) -> dict[str, Any]:
    """The tiles and the verdict bar: cells, unexpected, low, accepted, expected losses,
    duplicates (within and beyond the bound), missed, time."""
    cells: list[Mapping[str, Any]] = [
        c for c in document.get("cells") or [] if isinstance(c, Mapping)
    ]
    summary = dict(document.get("summary") or {})
    by_verdict = {str(k): int(as_float(v)) for k, v in (summary.get("by_verdict") or {}).items()}
    total = sum(by_verdict.values()) or 1
    states = [r_cell["state"] for r in m.rows for r_cell in r.cells if r_cell]
    duplicates = int(as_float(summary.get("duplicates", 0)))
    beyond = summary.get("duplicates_beyond_bound")
    if beyond is None:  # a report written before the bound was counted: from its cells
        beyond = sum(
            max(0, int(as_float(c.get("duplicates"))) - int(as_float(c.get("bound"))))
            for c in cells
        )
    accepted = sum(1 for c in cells if c.get("accepted") and not c.get("expected"))
    return {
        "cells": number(summary.get("cells", len(cells))),
        "planned": number(summary.get("planned")),
        "unexpected": number(summary.get("unexpected", states.count("x"))),
        "low": number(summary.get("low", states.count("l"))),
        "accepted_cells": number(summary.get("accepted", accepted)),
        "expected_losses": number(summary.get("expected_losses", 0)),
        "duplicates": number(duplicates),
        "beyond_bound": number(int(as_float(beyond))),
        "within_bound": number(max(0, duplicates - int(as_float(beyond)))),
        "missed_count": number(summary.get("missed", len(m.missed))),
        "seconds": duration(as_float(summary.get("seconds"))),
        "cells_per_second": number(summary.get("cells_per_second", 0)),
        "by_verdict": [
            {
                "verdict": v if v in VERDICTS else "unknown",
                "text": visible(v),
                "count": n,
                "percent": round(100 * n / total, 2),
                "glyph": VERDICTS.get(v, (UNKNOWN_GLYPH, ""))[0],
            }
            for v, n in sorted(
                by_verdict.items(),
                key=lambda kv: list(VERDICTS).index(kv[0]) if kv[0] in VERDICTS else 99,
            )
        ],
    }


def _head(document: Mapping[str, Any]) -> dict[str, Any]:
    """The campaign as configured: runtime, store, seed, points, modes, versions, command."""
    return {
        "title": f"killpoint crash matrix — {visible(document.get('runtime', ''))}",
        "schema": visible(document.get("schema", "")),
        "command": visible(redact(str(document.get("command", "")))),
        "seed": visible(document.get("seed", "")),
        "runtime": visible(document.get("runtime", "")),
        "store": visible(document.get("store", "")),
        "modes": [visible(m) for m in document.get("modes") or []],
        "points": visible(document.get("points", "")),
        "depth": visible(document.get("depth", "")),
        "versions": [(visible(k), visible(v)) for k, v in (document.get("versions") or {}).items()],
        "interrupted": bool(document.get("interrupted")),
        # Stopped early (--fail-fast, --budget): the terminal's lines, so the two agree
        # (under the banner's own heading, the first without its "stopped: ").
        "stopped": [
            visible(text.strip().removeprefix("stopped: ")) for text, _ in stopped_lines(document)
        ],
        "narrowed": visible(document.get("narrowed") or ""),
        "excluded": [visible(x) for x in document.get("excluded_from_comparison") or []],
    }


def _rows_view(document: Mapping[str, Any], m: Matrix) -> dict[str, Any]:
    """The matrix's rows and what the filters offer; rows never started."""
    ordered = m.rows
    runtimes = list(dict.fromkeys(r.runtime for r in ordered))
    stores = list(dict.fromkeys(r.store for r in ordered))
    plan = m.plan
    return {
        "columns": m.columns,
        "groups": m.groups,
        "rows": ordered,
        "runtimes": runtimes,
        "row_modes": list(dict.fromkeys(r.mode for r in sorted(ordered, key=lambda r: r.sort[2]))),
        "stores": stores,
        "show_runtime": len(runtimes) > 1,
        "show_store": len(stores) > 1,
        # Rows with no cell run: an interrupt came first (before their baselines ended, or
        # before their first cell did).
        "unstarted": [
            " / ".join((r.scenario, r.mode, r.store))
            for r in ordered
            if not r.count and not r.skipped and (r.unplanned or r.not_run or plan is None)
        ],
        # Rows whose baseline failed: their crash cells were not planned (one cell each
        # carries the failure); the banner names them.
        "not_planned": [r for r in ordered if r.not_planned],
        "has_plan": plan is not None,
        "not_run": sum(r.not_run for r in ordered),
        "unplanned": sum(1 for r in ordered if r.unplanned and not r.count),
        "listed": m.listed,
        "missed": m.missed,
    }


def _tables(document: Mapping[str, Any]) -> dict[str, Any]:
    """The legend's tables, the skipped rows and the baselines."""
    return {
        "point_kinds": [
            {"name": k.name, "label": k.label, "meaning": k.meaning}
            for k in kinds.REGISTRY.values()
        ],
        "finding_kinds": [
            {"name": k.name, "verdict": k.verdict, "severity": k.severity, "meaning": k.meaning}
            for k in FINDING_KINDS.values()
        ],
        "verdicts": [{"verdict": v, "glyph": g, "meaning": m} for v, (g, m) in VERDICTS.items()],
        "skipped": [
            {k: visible(item.get(k, "")) for k in ("runtime", "scenario", "mode", "reason")}
            for item in document.get("skipped") or []
            if isinstance(item, Mapping)
        ],
        "baselines": [
            {
                "runtime": visible(b.get("runtime", "")),
                "scenario": visible(b.get("scenario", "")),
                "mode": visible(b.get("mode", "")),
                "store": visible(b.get("store", "")),
                "checkpoints": number(b.get("checkpoints")),
                "seconds": duration(as_float(b.get("seconds"))),
                "problem": visible(b["problem"]) if b.get("problem") else "",
                "nondeterministic": visible(b["nondeterministic"])
                if b.get("nondeterministic")
                else "",
                "trace_note": visible(b["trace_note"]) if b.get("trace_note") else "",
            }
            for b in document.get("baselines") or []
            if isinstance(b, Mapping)
        ],
    }


def build_view(document: Mapping[str, Any]) -> dict[str, Any]:
    """Everything the template shows, computed once; all run content passed through
    `visible`. The matrix and the panels (html_matrix, html_cells), the causes and groups
    (html_groups), the header's figures and the legend's tables."""
    strings = Strings()
    m = build_matrix(document, strings)
    no_crash = no_crash_rows(document)  # their cells made no crash: named as their rows
    groups, group_cells = groups_view(groups_of(document), m.by_id, no_crash)
    causes, cause_cells = causes_view(causes_of(document), groups, m.by_id, len(groups), no_crash)
    without_crash = without_crash_view(document)
    accepted = accepted_view(document, groups, without_crash)
    figures = _figures(document, m)
    return {
        **_head(document),
        **figures,
        **_rows_view(document, m),
        **_tables(document),
        "show_accepted": bool(figures["accepted_cells"] or accepted),
        "causes": causes,
        "failing_causes": sum(1 for c in causes if c["failing"]),
        "finding_groups": groups,
        "failing_groups": sum(1 for g in groups if g["failing"]),
        "accepted_entries": accepted,
        "unmet": [a for a in accepted if not a["met"] and not a["rows"]],
        "without_crash": without_crash,
        "failing_rows": sum(1 for g in without_crash if g["failing"]),
        "data": {
            "strings": strings.items,
            "cells": m.data,
            # Filters: the groups' cells, then the causes' (a cause's index follows them).
            "groups": [*group_cells, *cause_cells],
            "verdicts": {v: g for v, (g, _) in VERDICTS.items()},
            "kinds": EVENT_KINDS,
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
