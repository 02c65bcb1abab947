"""A campaign as JUnit XML, the format every CI system reads, rendered from the report's
document (so `killpoint matrix --junit`, `killpoint merge --junit` and `killpoint report
--junit` write the same file for the same campaign): one test case per cell, classname
`killpoint.RUNTIME/SCENARIO/MODE` and name `STORE/SCHEDULE`, so that a CI's test view
groups the cells by row; one more per row that breaks the contract without a crash
(`STORE/without-crash`), and per row or point skipped. A row whose baseline failed had
its crash cells not planned: its one cell, which carries the failure without a crash, is
that row's `STORE/without-crash` case (as the pytest plugin names it), saying which cells
were not planned, and stands for the row's other findings of its uninterrupted run. A
campaign that did not run its whole plan (interrupted, or stopped by --fail-fast or
--budget) has one skipped case per row with cells not run, `STORE/not-run`, saying how
many and why: without them its suite would read as complete and green.

An unexpected cell is a <failure> carrying its findings and its replay command; one whose
unexpected findings are all of low severity passes, its severity in its properties (it
fails a run only under `--fail-on low`); an accepted one is <skipped type="accepted">
with the reason (pytest reports the plugin's accepted cells as xfail, which its JUnit
writes the same way). Every text and every attribute's value is masked
(killpoint.redaction) and made visible (report.text, and the two noncharacters XML 1.0
also refuses): XML 1.0 cannot even carry most control characters, and ElementTree
escapes the rest. `render` makes sure of it once, over the whole tree, for any value a
case was given (a verdict read from a report's JSON is anything).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Iterable, Mapping
from typing import Any

from killpoint.redaction import redact
from killpoint.report.planned import ROW_FIELDS, NotPlanned, Row, read_not_planned
from killpoint.report.text import as_float, cut, visible
from killpoint.values.findings import fails, open_severity
from killpoint.values.sentences import count

SUITE = "killpoint"


# What XML 1.0 refuses that `visible` lets through (it escapes C0, C1 and surrogates).
_NONCHARACTERS = re.compile("[\ufffe\uffff]")


def _safe(text: Any) -> str:
    shown = visible(redact(str(text)))
    if _NONCHARACTERS.search(shown):
        shown = _NONCHARACTERS.sub(lambda m: f"<U+{ord(m.group()):04X}>", shown)
    return shown


def _made_safe(root: ET.Element) -> None:
    """Every attribute's value and every text in the tree masked and made visible: the one
    place nothing a document holds can reach the file raw, whichever field it came by
    (`_safe` twice changes nothing)."""
    for element in root.iter():
        for key, value in list(element.attrib.items()):
            element.set(key, _safe(value))
        if element.text is not None:
            element.text = _safe(element.text)


def classname(runtime: str, scenario: str, mode: str) -> str:
    """The row a case belongs to: what a CI's test view groups by (the pytest plugin
    classes its items the same way)."""
    return _safe(f"{SUITE}.{runtime}/{scenario}/{mode}")


def _lines(findings: Iterable[Mapping[str, Any]]) -> list[str]:
    lines = []
    for f in findings:
        allowed = "allowed here, " if f.get("expected") else ""
        lines.append(f"{allowed}{f.get('kind')}: {cut(str(f.get('sentence', '')))}")
    return lines


def _case(suite: ET.Element, cls: str, name: str, seconds: float = 0.0) -> ET.Element:
    return ET.SubElement(
        suite, "testcase", classname=cls, name=_safe(name), time=f"{max(seconds, 0.0):.3f}"
    )


def _row_of(item: Mapping[str, Any]) -> Row:
    runtime, scenario, mode, store = (str(item.get(k)) for k in ROW_FIELDS)
    return runtime, scenario, mode, store


def _cell(
    suite: ET.Element, cell: Mapping[str, Any], seed: Any, not_planned: NotPlanned | None = None
) -> str:
    """The case of one cell (as the document holds it); its outcome: passed, failed or
    skipped. `not_planned`: the cell carries the failure of its row's baseline (no crash)."""
    findings = [f for f in cell.get("findings") or [] if isinstance(f, Mapping)]
    expected = bool(cell.get("expected"))
    severity = None if expected else open_severity(findings) or "high"
    verdict = str(cell.get("verdict", ""))
    schedule = "+".join(str(p) for p in cell.get("schedule") or [])
    case = _case(
        suite,
        classname(str(cell.get("runtime")), str(cell.get("scenario")), str(cell.get("mode"))),
        f"{cell.get('store')}/{'without-crash' if not_planned is not None else schedule}",
        as_float(cell.get("seconds")),
    )
    said = () if not_planned is None else (("not_planned", not_planned.what()),)
    ET.SubElement(case, "properties").extend(
        ET.Element("property", name=k, value=_safe(v))
        for k, v in (
            ("cell", cell.get("id", "")),
            ("verdict", verdict),
            ("expected", "yes" if expected else "no"),
            *([("severity", severity)] if severity else []),
            ("seed", seed),
            ("replay", cell.get("replay", "")),
            *said,
        )
    )
    if cell.get("accepted") and not expected:
        reasons = sorted({str(f["accepted"]) for f in findings if f.get("accepted")})
        ET.SubElement(
            case, "skipped", type="accepted", message=_safe(f"accepted: {'; '.join(reasons)}")
        )
        return "skipped"
    if expected or not fails(severity):
        return "passed"
    body = [f"{cell.get('id')}: {verdict} (unexpected)", *_lines(findings)]
    if not_planned is not None:
        body[:0] = [f"happens without a crash: the baseline failed, so {not_planned.what()}"]
    body += [f"replay: {cell.get('replay', '')}", f"seed: {seed}"]
    if cell.get("kept"):
        body.append(f"kept: {cell['kept']}")
    failure = ET.SubElement(
        case, "failure", type=verdict, message=_safe(cut(f"{verdict}: {cell.get('detail', '')}"))
    )
    failure.text = _safe("\n".join(body))
    return "failed"


def _not_run(suite: ET.Element, document: Mapping[str, Any]) -> int:
    """What an interrupted or stopped campaign did not run, as skipped cases: one per row
    (`STORE/not-run`), however many of its cells, so that a CI's test view shows the suite
    incomplete without a case per cell that never ran; one for the whole campaign when its
    document keeps no plan to say which rows. How many were added."""
    from killpoint.report.planned import incomplete, not_run_of, not_run_reason, read_planned

    plan = read_planned(document)
    if not plan:
        said = incomplete(document)
        if said is None:
            return 0
        case = _case(suite, _safe(SUITE), "not-run")
        ET.SubElement(case, "skipped", type="not-run", message=_safe(said))
        return 1
    why = not_run_reason(document)
    missing = not_run_of(document)
    for m in missing:
        runtime, scenario, mode, store = m.row
        if m.schedules is None:
            message = (
                f"the row's cells were never planned because {why} before its baseline finished"
            )
        else:
            of = count(len(plan.get(m.row) or ()), "planned cell")
            message = f"{len(m.schedules)} of {of} did not run because {why}"
        case = _case(suite, classname(runtime, scenario, mode), f"{store}/not-run")
        ET.SubElement(case, "skipped", type="not-run", message=_safe(message))
    return len(missing)


def render(document: Mapping[str, Any]) -> str:
    """The campaign's JUnit XML, from its report document."""
    from killpoint.judge.groups import Group

    root = ET.Element("testsuites")
    suite = ET.SubElement(root, "testsuite", name=SUITE)
    counts = {"passed": 0, "failed": 0, "skipped": 0}
    seed = document.get("seed")
    unplanned = {n.row: n for n in read_not_planned(document)}
    for cell in document.get("cells") or []:
        if isinstance(cell, Mapping):
            counts[_cell(suite, cell, seed, unplanned.get(_row_of(cell)))] += 1
    for group in document.get("without_crash") or []:
        if not isinstance(group, Mapping) or group.get("verdict") == "ok":
            continue
        heading = Group(
            key=str(group.get("key", "")),
            kind=str(group.get("kind", "")),
            tool=group.get("tool"),
            pattern=str(group.get("path") or "-"),
            severity=str(group.get("severity", "high")),
            verdict=str(group.get("verdict", "")),
        ).heading
        for row in group.get("rows") or []:
            # The scenario may hold slashes (a cassette's path); nothing else does.
            runtime, _, rest = str(row).partition("/")
            scenario, mode, store = [*rest.rsplit("/", 2), "", "", ""][:3]
            if (runtime, scenario, mode, store) in unplanned:
                continue  # its one cell is the row's case already (a name once per row)
            case = _case(suite, classname(runtime, scenario, mode), f"{store}/without-crash")
            if group.get("accepted"):
                ET.SubElement(case, "skipped", type="accepted", message=_safe(group["accepted"]))
                counts["skipped"] += 1
                continue
            example = str(group.get("example", ""))
            failure = ET.SubElement(
                case, "failure", type=str(group.get("verdict")), message=_safe(cut(example))
            )
            failure.text = _safe(
                f"happens without a crash: {heading}\n{example}\nrerun: {group.get('replay', '')}"
            )
            counts["failed"] += 1
    for s in document.get("skipped") or []:
        if not isinstance(s, Mapping):
            continue
        name = s.get("point") or "row"
        case = _case(
            suite,
            classname(str(s.get("runtime")), str(s.get("scenario")), str(s.get("mode"))),
            str(name),
        )
        ET.SubElement(case, "skipped", message=_safe(cut(str(s.get("reason", "")))))
        counts["skipped"] += 1
    counts["skipped"] += _not_run(suite, document)
    summary = document.get("summary") or {}
    suite.set("tests", str(sum(counts.values())))
    suite.set("failures", str(counts["failed"]))
    suite.set("errors", "0")
    suite.set("skipped", str(counts["skipped"]))
    suite.set("time", f"{as_float(summary.get('seconds')):.3f}")
    _made_safe(root)
    ET.indent(root)
    return '<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


__all__ = ["classname", "render"]
