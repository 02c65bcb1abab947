"""A campaign as JUnit XML (`killpoint matrix --junit PATH`), the format every CI system
reads: one test case per cell, classname `killpoint.RUNTIME/SCENARIO/MODE` and name
`STORE/SCHEDULE`, so that a CI's test view groups the cells by row; one more per row
that breaks the contract without a crash (`STORE/without-crash`), and per row or point
skipped (a row whose baseline failed is already a failing cell of its own).

An unexpected cell is a <failure> carrying its findings and its replay command; an
accepted one is <skipped type="accepted"> with the reason (pytest reports the plugin's
accepted cells as xfail, which its JUnit writes the same way). Every text is masked
(killpoint.redaction) and made visible (report.text): XML 1.0 cannot even carry most
control characters, and ElementTree escapes the rest.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from killpoint.engine.cell_log import heads
from killpoint.redaction import redact
from killpoint.report.text import cut, visible

if TYPE_CHECKING:
    from killpoint.engine.campaign import CampaignResult
    from killpoint.values.cell import CellResult

SUITE = "killpoint"


def _safe(text: Any) -> str:
    return visible(redact(str(text)))


def classname(runtime: str, scenario: str, mode: str) -> str:
    """The row a case belongs to: what a CI's test view groups by (the pytest plugin
    classes its items the same way)."""
    return _safe(f"{SUITE}.{runtime}/{scenario}/{mode}")


def _lines(findings: Iterable[dict[str, Any]]) -> list[str]:
    lines = []
    for f in findings:
        allowed = "allowed here, " if f.get("expected") else ""
        lines.append(f"{allowed}{f.get('kind')}: {cut(str(f.get('sentence', '')))}")
    return lines


def _case(suite: ET.Element, cls: str, name: str, seconds: float = 0.0) -> ET.Element:
    return ET.SubElement(
        suite, "testcase", classname=cls, name=_safe(name), time=f"{max(seconds, 0.0):.3f}"
    )


def _cell(suite: ET.Element, cell: CellResult, seed: int) -> str:
    """The case of one cell; its outcome: passed, failed or skipped."""
    case = _case(
        suite,
        classname(cell.runtime, cell.scenario, cell.mode),
        f"{cell.store}/{'+'.join(cell.schedule)}",
        cell.seconds,
    )
    ET.SubElement(case, "properties").extend(
        ET.Element("property", name=k, value=_safe(v))
        for k, v in (
            ("cell", cell.id),
            ("verdict", cell.verdict),
            ("expected", "yes" if cell.expected else "no"),
            ("seed", seed),
            ("replay", cell.replay),
        )
    )
    if cell.accepted:
        reasons = sorted({str(f["accepted"]) for f in cell.findings if f.get("accepted")})
        ET.SubElement(
            case, "skipped", type="accepted", message=_safe(f"accepted: {'; '.join(reasons)}")
        )
        return "skipped"
    if cell.expected:
        return "passed"
    body = [f"{cell.id}: {cell.verdict} (unexpected)", *_lines(cell.findings)]
    body += [f"replay: {cell.replay}", f"seed: {seed}"]
    if cell.kept:
        body.append(f"kept: {cell.kept}")
    failure = ET.SubElement(
        case, "failure", type=cell.verdict, message=_safe(cut(f"{cell.verdict}: {cell.detail}"))
    )
    failure.text = _safe("\n".join(body))
    return "failed"


def render(result: CampaignResult) -> str:
    """The whole document, as text."""
    root = ET.Element("testsuites")
    suite = ET.SubElement(root, "testsuite", name=SUITE)
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    for cell in heads(result.cells):
        counts[_cell(suite, cell, result.seed)] += 1
    for group in result.row_groups():
        if group.verdict == "ok":
            continue
        for row in group.cells:
            # The scenario may hold slashes (a cassette's path); nothing else does.
            runtime, _, rest = row.partition("/")
            scenario, mode, store = [*rest.rsplit("/", 2), "", "", ""][:3]
            case = _case(suite, classname(runtime, scenario, mode), f"{store}/without-crash")
            if group.accepted:
                ET.SubElement(case, "skipped", type="accepted", message=_safe(group.accepted))
                counts["skipped"] += 1
                continue
            failure = ET.SubElement(
                case, "failure", type=group.verdict, message=_safe(cut(group.example))
            )
            failure.text = _safe(
                f"happens without a crash: {group.heading}\n{group.example}\nrerun: {group.replay}"
            )
            counts["failed"] += 1
    for s in result.skipped:
        point = getattr(s, "point", None)
        name = point or "row"
        case = _case(suite, classname(s.runtime, s.scenario, s.mode), name)
        ET.SubElement(case, "skipped", message=_safe(cut(s.reason)))
        counts["skipped"] += 1
    total = sum(counts.values())
    suite.set("tests", str(total))
    suite.set("failures", str(counts["failed"]))
    suite.set("errors", "0")
    suite.set("skipped", str(counts["skipped"]))
    suite.set("time", f"{result.seconds:.3f}")
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


__all__ = ["classname", "render"]
