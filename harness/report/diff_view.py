"""What the HTML report shows of a diff against a base report: its counts and each kind of
change, as plain text for the template (which escapes it)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from killpoint.report.diff import compare
from killpoint.report.diff_text import CELL_SECTIONS, SECTIONS, counts
from killpoint.report.text import cut, visible

SHOWN = 200  # items per section on the page; the rest are counted


def diff_view(base: Mapping[str, Any], head: Mapping[str, Any], base_name: str) -> dict[str, Any]:
    diff = compare(dict(base), dict(head), base_name="base", head_name="head")
    sections = []
    for name, title in SECTIONS:
        groups = getattr(diff, name)
        if groups:
            items = [
                {
                    "name": visible(g.heading),
                    "text": f"[{visible(g.verdict)}] {g.base} -> {g.head}: {cut(visible(g.example), 300)}",
                }
                for g in groups
            ]
            sections.append(_section(title, items, open_=name == "new_groups"))
    for name, title in CELL_SECTIONS:
        cells = getattr(diff, name)
        if cells:
            items = [
                {
                    "name": visible(c.id),
                    "text": f"{visible(c.base or 'not run')} -> {visible(c.head or 'not run')}",
                }
                for c in cells
            ]
            sections.append(_section(title, items, open_=name == "new"))
    return {
        "base": cut(visible(base_name), 200),
        "counts": counts(diff),
        "regressed": diff.regressed,
        "sections": sections,
    }


def _section(title: str, items: list[dict[str, str]], *, open_: bool) -> dict[str, Any]:
    return {
        "title": title,
        "items": items[:SHOWN],
        "more": max(0, len(items) - SHOWN),
        "open": open_,
    }


__all__ = ["diff_view"]
