"""The HTML crash-matrix report, parsed: matrix rows and columns, verdict classes, filters,
the header, missed cells, skipped rows, and every piece of run content escaped.

The page is parsed with `html.parser` into a small element tree; text and attribute values
come back unescaped, so run content that shows up as *text* was escaped in the source, and
run content that became an *element* or an *attribute* was not.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import re
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

from killpoint import kinds
from killpoint.cli.main import main as killpoint
from killpoint.engine.campaign import CampaignResult
from killpoint.judge.groups import Accepted, apply_accepted, group_findings
from killpoint.report.html import render_report
from killpoint.report.html_cells import STDERR_CHARS
from killpoint.report.text import visible
from killpoint.scenarios.builtin.hostile_content import PAYLOADS
from killpoint.values.cell import CellResult
from killpoint.values.findings import KINDS as FINDING_KINDS
from killpoint.values.findings import RANK, VERDICTS, Finding
from tests.benchmarks.report_size import (
    DEFAULT_MATRIX,
    SIZE_LIMIT,
    summary_of,
    synthetic_document,
)
from tests.harness.failed_baseline import (
    PROBLEM,
    ROW,
    document_of,
    failed_row,  # noqa: F401  (a fixture)
    stopped_row,  # noqa: F401  (a fixture)
)

VOID = {"meta", "input", "br", "img", "hr", "link", "area", "base", "col", "source", "wbr"}


@dataclass
class Element:
    tag: str
    attrs: dict[str, str]
    children: list[Element | str] = field(default_factory=list)
    parent: Element | None = None

    @property
    def text(self) -> str:
        return "".join(c if isinstance(c, str) else c.text for c in self.children)

    @property
    def classes(self) -> set[str]:
        return set(self.attrs.get("class", "").split())

    def iter(self) -> Iterator[Element]:
        yield self
        for c in self.children:
            if isinstance(c, Element):
                yield from c.iter()

    def find_all(self, tag: str | None = None, cls: str | None = None) -> list[Element]:
        return [
            e
            for e in self.iter()
            if (tag is None or e.tag == tag) and (cls is None or cls in e.classes)
        ]

    def by_id(self, ident: str) -> Element:
        found = [e for e in self.iter() if e.attrs.get("id") == ident]
        assert len(found) == 1, f"{len(found)} elements with id {ident!r}"
        return found[0]


class TreeBuilder(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#document", {})
        self.current = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        element = Element(tag, {k: v or "" for k, v in attrs}, parent=self.current)
        self.current.children.append(element)
        if tag not in VOID:
            self.current = element

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.current.children.append(Element(tag, {k: v or "" for k, v in attrs}, self.current))

    def handle_endtag(self, tag: str) -> None:
        node: Element | None = self.current
        while node is not None and node.tag != tag:
            node = node.parent
        assert node is not None and node.parent is not None, f"stray </{tag}>"
        self.current = node.parent

    def handle_data(self, data: str) -> None:
        self.current.children.append(data)


def differs(path: Any, baseline: Any, actual: Any) -> list[dict[str, Any]]:
    """The findings of a cell whose one difference is at `path`."""
    return [
        {"kind": "run-differs", "severity": "medium", "verdict": "diverged", "expected": False,
         "sentence": f"{path} differs", "path": path, "tool": None, "expected_value": baseline,
         "actual_value": actual, "evidence": [], "group": "run-differs:-:-"}
    ]  # fmt: skip


def parse(html: str) -> Element:
    builder = TreeBuilder()
    builder.feed(html)
    builder.close()
    return builder.root


def data_of(page: Element) -> dict[str, Any]:
    return json.loads(page.by_id("kp-data").text)


def events(data: dict[str, Any], entry: dict[str, Any]) -> list[list[Any]]:
    """A cell's timeline as the JSON has it ([seconds, text, kind, lane]), from the data
    block's compact form ([milliseconds, text, kind index, lane], texts in the table)."""
    s = data["strings"]
    return [[t / 1000, s[i], data["kinds"][k], s[lane]] for t, i, k, lane in entry["timeline"]]


# -- documents -------------------------------------------------------------------------------


def cell(
    scenario: str,
    mode: str,
    schedule: list[str],
    verdict: str = "ok",
    expected: bool = True,
    **extra: Any,
) -> dict[str, Any]:
    cell_id = "/".join(("reference", scenario, mode, "sqlite", "+".join(schedule)))
    base: dict[str, Any] = {
        "id": cell_id,
        "runtime": "reference",
        "scenario": scenario,
        "mode": mode,
        "store": "sqlite",
        "schedule": schedule,
        "verdict": verdict,
        "expected": expected,
        "duplicates": 0,
        "bound": 1,
        "seconds": 0.25,
        "detail": "",
        "findings": [],
        "store_at_crash": None,
        "stderr_tail": "",
        "timeline": [
            [0.001, "worker started (pid 10)", "start", "worker"],
            [0.1, "worker killed (exit -9)", "kill", "worker"],
        ],
        "exit_codes": [-9, 0],
        "replay": f"killpoint replay {cell_id}",
        "kept": None,
    }
    base.update(extra)
    return base


def document(cells: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "schema": "killpoint.matrix/1",
        "command": "killpoint matrix --scenarios research,parallel-fetch --seed 42",
        "seed": 42,
        "runtime": "reference",
        "store": "sqlite",
        "modes": ["runs", "tool-batch", "tool"],
        "points": "all",
        "depth": 2,
        "versions": {"python": "3.11.7", "killpoint": "0.1.0", "openai": "3.57.0"},
        "interrupted": False,
        "summary": summary_of(cells, 12.5),
        "excluded_from_comparison": ["run_id", "created_at"],
        "skipped": [],
        "baselines": [],
        "cells": cells,
    }
    doc.update(extra)
    return doc


@pytest.fixture
def small() -> dict[str, Any]:
    return document(
        [
            # out of column order on purpose: the report orders them
            cell("research", "tool-batch", ["sigstop:1"], "duplicated", False, duplicates=2),
            cell("research", "tool-batch", ["after-checkpoint:2"]),
            cell("research", "tool-batch", ["mid-batch:1:0"], duplicates=1),
            cell("research", "tool-batch", ["after-checkpoint:1"], "diverged", False),
            cell("research", "tool-batch", ["after-checkpoint:2", "mid-model:1"]),
            cell("research", "runs", ["after-checkpoint:1"], "lost", True),
            cell("research", "runs", ["model-500:1"]),
            cell("research", "runs", ["mid-commit:1"], "missed", False),
            cell("parallel-fetch", "tool", ["after-checkpoint:1"], "corrupt", False),
            cell("parallel-fetch", "tool", ["mid-model:2"], "unresumable", False),
            cell("parallel-fetch", "tool", ["double-resume:1"], "hung", False),
        ],
        skipped=[
            {"runtime": "reference", "scenario": "parallel-fetch", "mode": "runs", "reason": "no"}
        ],
    )


# -- the matrix ------------------------------------------------------------------------------


def test_columns_are_boundaries_then_in_step_points_then_faults_then_depth_two(small) -> None:
    page = parse(render_report(small))
    matrix = page.by_id("matrix")
    columns = [th.attrs["title"] for th in matrix.find_all("th", "col")]
    assert columns == [
        "after-checkpoint:1",
        "after-checkpoint:2",
        "mid-batch:1:0",
        "mid-model:2",
        "mid-commit:1",
        "sigstop:1",
        "double-resume:1",
        "model-500:1",
        "after-checkpoint:2+mid-model:1",
    ]
    assert [th.text for th in matrix.find_all("th", "col")] == [
        "1",
        "2",
        "1:0",
        "2",
        "1",
        "1",
        "1",
        "1",
        "2+1",
    ]
    groups = [(th.text, th.attrs["colspan"]) for th in matrix.find_all("th", "grp")]
    assert groups == [
        ("after-checkpoint", "2"),
        ("mid-batch", "1"),
        ("mid-model", "1"),
        ("mid-commit", "1"),
        ("sigstop", "1"),
        ("double-resume", "1"),
        ("model-500", "1"),
        ("after-checkpoint → mid-model", "1"),
    ]


def test_rows_are_runtime_scenario_mode_store_with_verdict_classes(small) -> None:
    page = parse(render_report(small))
    rows = page.by_id("matrix").find_all("tbody")[0].find_all("tr")
    keys = [(r.attrs["data-scenario"], r.attrs["data-mode"], r.attrs["data-store"]) for r in rows]
    # modes in the campaign's order; scenarios in the order they first appear
    assert keys == [
        ("research", "runs", "sqlite"),
        ("research", "tool-batch", "sqlite"),
        ("parallel-fetch", "runs", "sqlite"),
        ("parallel-fetch", "tool", "sqlite"),
    ]
    assert [r.attrs["data-unexp"] for r in rows] == ["1", "2", "0", "3"]

    def cells(row: Element) -> list[tuple[str, ...]]:
        out = []
        for td in row.find_all("td")[:-1]:  # the last is the row's unexpected count
            verdict = next((c for c in td.classes if c.startswith("v-")), "")
            kind = "x" if "x" in td.classes else "e" if "e" in td.classes else ""
            out.append((verdict, kind, td.text) if verdict else ("",))
        return out

    assert cells(rows[1]) == [
        ("v-diverged", "x", "≠"),
        ("v-ok", "e", "✓"),
        ("v-ok", "e", "✓1"),  # a duplicate badge within the bound
        ("",),
        ("",),
        ("v-duplicated", "x", "×2"),
        ("",),
        ("",),
        ("v-ok", "e", "✓"),
    ]
    assert cells(rows[0])[0] == ("v-lost", "e", "∅")
    assert cells(rows[0])[4] == ("v-missed", "x", "?")
    assert [c[:2] for c in cells(rows[3]) if c[0]] == [
        ("v-corrupt", "x"),
        ("v-unresumable", "x"),
        ("v-hung", "x"),
    ]
    # duplicate counts as badges
    badges = [b.text for b in rows[1].find_all("b")]
    assert badges == ["1", "2"]
    # every cell of the document is in the data block, once
    data = data_of(page)
    ids = {data["strings"][c["id"]] for c in data["cells"]}
    assert ids == {c["id"] for c in small["cells"]}


def test_each_button_opens_its_own_cell(small) -> None:
    page = parse(render_report(small))
    data = data_of(page)
    for button in page.by_id("matrix").find_all("button"):
        entry = data["cells"][int(button.attrs["data-c"])]
        assert button.attrs["title"].startswith("+".join(entry["schedule"]) + ":")
        assert entry["verdict"] in button.attrs["title"]


def test_skipped_rows_show_their_reason(small) -> None:
    page = parse(render_report(small))
    row = next(r for r in page.by_id("matrix").find_all("tr") if "skipped" in r.classes)
    assert (row.attrs["data-scenario"], row.attrs["data-mode"]) == ("parallel-fetch", "runs")
    assert row.find_all("td", "skip")[0].text == "skipped: no"
    listed = page.by_id("skipped")
    assert [td.text for td in listed.find_all("td")] == [
        "reference",
        "parallel-fetch",
        "runs",
        "no",
    ]


def test_missed_cells_stand_out(small) -> None:
    page = parse(render_report(small))
    banner = page.by_id("missed-banner")
    assert "the matrix did not exercise what it claims" in banner.text
    assert [b.text for b in banner.find_all("button")] == [
        "reference/research/runs/sqlite/mid-commit:1"
    ]
    assert (
        "bad"
        in next(
            t for t in page.by_id("summary").find_all("div", "tile") if "missed" in t.text
        ).classes
    )

    clean = document([c for c in small["cells"] if c["verdict"] != "missed"])
    assert not [
        e for e in parse(render_report(clean)).iter() if e.attrs.get("id") == "missed-banner"
    ]


def test_filters_unexpected_mode_runtime(small) -> None:
    page = parse(render_report(small))
    toggle = page.by_id("f-unexp")
    assert (toggle.tag, toggle.attrs["type"]) == ("input", "checkbox")
    modes = [o.attrs["value"] for o in page.by_id("f-mode").find_all("option")]
    assert modes == ["", "runs", "tool-batch", "tool"]
    runtimes = [o.attrs["value"] for o in page.by_id("f-runtime").find_all("option")]
    assert runtimes == ["", "reference"]


def test_header_has_the_campaign(small) -> None:
    page = parse(render_report(small))
    tiles = {
        t.find_all("span")[-1].text: t.find_all("b")[0].text
        for t in page.by_id("summary").find_all("div", "tile")
    }
    assert tiles == {
        "cells": "11",
        "unexpected, failing": "6",
        "expected loss": "1",
        "duplicate effects: 2 within the bound, 1 beyond": "3",
        "missed": "1",
        "duration": "12.5 s",
        "cells per second": "0.88",
    }
    header = page.find_all("header")[0].text
    for text in ("reference", "sqlite", "42", "python 3.11.7", "openai 3.57.0", "killpoint 0.1.0"):
        assert text in header
    assert page.by_id("command").text == small["command"]
    assert page.by_id("status").text == "✗ 6 unexpected"


def test_every_verdict_expected_says_so(small) -> None:
    good = document([c for c in small["cells"] if c["expected"]])
    page = parse(render_report(good))
    assert page.by_id("status").text == "✓ every verdict expected"


def test_an_interrupted_campaign_says_so(small) -> None:
    small["interrupted"] = True
    small["summary"]["planned"] = 40
    text = parse(render_report(small)).find_all("body")[0].text
    assert "Interrupted" in text and "11 cells that finished of 40 planned" in text


def test_an_interrupted_report_never_reads_green_and_lists_rows_never_started(small) -> None:
    """Ctrl-C after the expected cells only: the status says interrupted, never "every
    verdict expected"; a row whose baseline ran and no cell did is named; empty cells say
    they may not have run."""
    good = document(
        [c for c in small["cells"] if c["expected"]],
        interrupted=True,
        baselines=[
            {"runtime": "reference", "scenario": "research", "mode": "tool", "store": "sqlite"},
            {"runtime": "reference", "scenario": "cancel", "mode": "runs", "store": "sqlite"},
        ],
    )
    good["summary"]["planned"] = 665
    page = parse(render_report(good))
    status = page.by_id("status").text
    assert "interrupted" in status and "every verdict expected" not in status
    banner = page.by_id("interrupted").text
    assert "cancel / runs / sqlite" in banner and "research / tool / sqlite" in banner
    empty = page.by_id("matrix").find_all("td", "na")
    assert empty and all("not run" in td.attrs["title"] for td in empty)


def test_the_script_is_allowed_by_hash_and_nothing_else_is(small) -> None:
    html = render_report(small)
    page = parse(html)
    scripts = page.find_all("script")
    assert [s.attrs for s in scripts] == [{"type": "application/json", "id": "kp-data"}, {}]
    csp = next(m for m in page.find_all("meta") if m.attrs.get("http-equiv"))
    digest = base64.b64encode(hashlib.sha256(scripts[1].text.encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}';" in csp.attrs["content"]
    assert "default-src 'none'" in csp.attrs["content"]
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", html), (
        "nothing from the network"
    )


def test_timeline_events_keep_their_kind_and_lane() -> None:
    """Events are [t, text, kind, lane]; an entry written before kinds existed reads as a
    harness note, and a kind the report does not know is drawn as a note."""
    evidence = cell(
        "research",
        "tool",
        ["after-checkpoint:1"],
        "ok",
        True,
        timeline=[
            [0.0, "plan: after-checkpoint:1"],
            [0.01, "gate tool:search:abc:finished", "tool", "tools"],
            [0.02, "strange", "no-such-kind", "resumer-b"],
        ],
    )
    data = data_of(parse(render_report(document([evidence]))))
    assert [[k, lane] for _, _, k, lane in events(data, data["cells"][0])] == [
        ["other", "harness"],
        ["tool", "tools"],
        ["other", "resumer-b"],
    ]


def test_detail_data_has_the_evidence() -> None:
    evidence = cell(
        "research",
        "tool",
        ["after-checkpoint:3"],
        "diverged",
        False,
        detail="session.runs[0].content: baseline 'a', resumed 'b'",
        findings=differs("session.runs[0].content", "a", 7),
        store_at_crash={"checkpoints": 3, "runs": [{"run": 1, "status": "RUNNING"}]},
        stderr_tail="Traceback ...\nValueError: x",
        kept="/tmp/killpoint-x",
    )
    data = data_of(parse(render_report(document([evidence]))))
    entry = data["cells"][0]
    s = data["strings"]
    assert entry["schedule"] == ["after-checkpoint:3"]
    assert (entry["verdict"], entry.get("expected", False)) == ("diverged", False)
    assert s[entry["detail"]] == evidence["detail"]
    assert {k: s[v] for k, v in entry["diff"].items()} == {
        "path": "session.runs[0].content",
        "baseline": "a",
        "actual": "7",
    }
    assert entry["store"] == {"checkpoints": 3, "runs": [{"run": 1, "status": "RUNNING"}]}
    assert s[entry["stderr"]] == evidence["stderr_tail"]
    assert events(data, entry) == evidence["timeline"]
    assert s[entry["replay"]] == evidence["replay"]
    assert s[entry["kept"]] == "/tmp/killpoint-x"
    assert entry["exit_codes"] == [-9, 0]


# -- size ------------------------------------------------------------------------------------


def test_stderr_tails_are_clipped_and_long_strings_stored_once() -> None:
    long_tail = "\n".join(f"line {n} " + "x" * 60 for n in range(300))
    cells = [
        cell("research", "tool", [f"after-checkpoint:{k}"], stderr_tail=long_tail)
        for k in range(1, 40)
    ] + [cell("research", "tool", ["mid-model:1"], "diverged", False, stderr_tail=long_tail)]
    data = data_of(parse(render_report(document(cells))))
    tails = {data["strings"][c["stderr"]] for c in data["cells"]}
    assert len(tails) == 2  # 39 expected cells share one clipped tail; the unexpected its own
    short, longer = sorted(tails, key=len)
    assert len(short) <= STDERR_CHARS["expected"] < len(longer) <= STDERR_CHARS["unexpected"]
    assert long_tail.endswith(short) and long_tail.endswith(longer)
    assert short.startswith("line ")  # cut at a line start
    assert {c["stderr_full"] for c in data["cells"]} == {len(long_tail)}


def test_the_whole_default_matrix_stays_under_five_megabytes() -> None:
    """Issue 56: the whole default matrix's report was 6.07 MB against the documented 5 MB.
    Its 2,211 cells, shaped as the engine writes them (a traced worker's history on every
    fast-path kill cell, a worker pid in every timeline), render under the limit."""
    doc = synthetic_document(DEFAULT_MATRIX)
    html = render_report(doc)
    size = len(html.encode("utf-8"))
    assert len(doc["cells"]) == DEFAULT_MATRIX == 2211
    assert size < SIZE_LIMIT, f"{size} bytes"
    page = parse(html)
    assert len(page.by_id("matrix").find_all("button")) == DEFAULT_MATRIX


# -- escaping --------------------------------------------------------------------------------

TRAP = "<script>window.__kp=1</script>"
HOSTILE = (
    f'{TRAP}<img src=x onerror="alert(1)"><svg onload=alert(2)></svg>'
    '"><a href="javascript:alert(3)">x</a></script><!-- {{ 7*7 }} {% raw %} \x1b[31m'
    "\u202egnp.exe\x00\ud800'"
)


def tags_and_attributes(page: Element) -> tuple[set[str], set[str]]:
    elements = list(page.iter())[1:]
    return {e.tag for e in elements}, {a for e in elements for a in e.attrs}


def assert_nothing_raw(html: str, page: Element, benign: Element) -> None:
    tags, attributes = tags_and_attributes(page)
    benign_tags, benign_attributes = tags_and_attributes(benign)
    assert tags <= benign_tags, f"new elements: {tags - benign_tags}"
    assert attributes <= benign_attributes, f"new attributes: {attributes - benign_attributes}"
    assert not any(a.startswith("on") for a in attributes)
    assert not page.find_all("img") and not page.find_all("a") and not page.find_all("iframe")
    assert len(page.find_all("script")) == 2
    assert html.count("</script") == 2
    assert html.count("<script") == 2
    urls = ("href", "src", "action", "formaction", "xlink:href", "srcdoc", "data")
    assert not [v for e in page.iter() for k, v in e.attrs.items() if k in urls]
    assert "\x00" not in html and "\x1b" not in html and "\u202e" not in html


def hostile_everywhere() -> dict[str, Any]:
    cells = []
    for n, (verdict, expected) in enumerate(
        [("diverged", False), ("missed", False), (HOSTILE, False), ("ok", True)]
    ):
        c = cell(
            f"hostile-content{HOSTILE}",
            f"tool{HOSTILE}",
            ["after-checkpoint:1"] if n != 2 else [f"after-checkpoint:{HOSTILE}"],
            verdict,
            expected,
            runtime=f"reference{HOSTILE}",
            store=f"sqlite{HOSTILE}",
            id=f"reference/{HOSTILE}/{n}",
            detail=HOSTILE,
            findings=differs(HOSTILE, HOSTILE, {HOSTILE: [HOSTILE]}),
            store_at_crash={"checkpoints": HOSTILE, "runs": [{HOSTILE: HOSTILE}]},
            stderr_tail=HOSTILE,
            timeline=[[0.0, HOSTILE], [0.2, f"{HOSTILE} started (pid 1)", "start", HOSTILE]],
            exit_codes=[-9, HOSTILE],
            replay=HOSTILE,
            kept=HOSTILE,
            duplicates=1,
        )
        cells.append(c)
    doc = document(cells)
    doc.update(
        command=HOSTILE,
        seed=HOSTILE,
        runtime=HOSTILE,
        store=HOSTILE,
        modes=[HOSTILE, "tool"],
        points=HOSTILE,
        depth=HOSTILE,
        versions={HOSTILE: HOSTILE},
        excluded_from_comparison=[HOSTILE],
        skipped=[{"runtime": HOSTILE, "scenario": HOSTILE, "mode": HOSTILE, "reason": HOSTILE}],
        baselines=[
            {
                "runtime": HOSTILE,
                "scenario": HOSTILE,
                "mode": HOSTILE,
                "store": HOSTILE,
                "checkpoints": HOSTILE,
                "seconds": HOSTILE,
                "problem": HOSTILE,
                "nondeterministic": HOSTILE,
                "trace_note": HOSTILE,
            }
        ],
    )
    doc["schema"] = HOSTILE
    doc["summary"]["by_verdict"][HOSTILE] = 1
    for c in doc["cells"]:
        c["findings"][0].update(evidence=[HOSTILE, HOSTILE], tool=HOSTILE, accepted=HOSTILE)
        c.update(sides={"expected": HOSTILE, "actual": HOSTILE})
        c.update(diff=[{"path": HOSTILE, "expected": HOSTILE, "actual": [HOSTILE]}])
    doc["cells"][0]["accepted"] = True
    doc["groups"] = [
        {"key": HOSTILE, "kind": HOSTILE, "tool": HOSTILE, "path": HOSTILE, "severity": HOSTILE,
         "verdict": HOSTILE, "meaning": HOSTILE, "count": HOSTILE, "cells": [HOSTILE, doc["cells"][0]["id"]],
         "example": HOSTILE, "example_cell": doc["cells"][0]["id"], "replay": HOSTILE, "accepted": HOSTILE},
        {"key": "run-differs:-:-", "kind": "run-differs", "verdict": "diverged", "severity": "medium",
         "count": 1, "cells": [HOSTILE], "example": HOSTILE, "example_cell": HOSTILE, "replay": HOSTILE},
    ]  # fmt: skip
    doc["accepted"] = {
        HOSTILE: {"reason": HOSTILE, "link": HOSTILE},
        "x": {"reason": HOSTILE, "link": "javascript:alert(1)"},
        "y": {"reason": HOSTILE, "link": f"https://example.org/{HOSTILE}"},
        "z": HOSTILE,
    }
    return doc


def test_hostile_strings_in_every_field_stay_text() -> None:
    doc = hostile_everywhere()
    html = render_report(doc)
    page = parse(html)
    # A benign page with the same parts (a missed banner, skipped rows, baselines).
    benign_html = render_report(
        document(
            [
                cell(
                    "r",
                    "tool",
                    ["after-checkpoint:1"],
                    "missed",
                    False,
                    findings=differs("runs[0].x", 1, 2),
                    diff=[{"path": "session.x", "expected": 1, "actual": 2}],
                )
            ],
            skipped=[{"runtime": "r", "scenario": "s", "mode": "m", "reason": "x"}],
            baselines=[{"runtime": "r", "scenario": "s", "mode": "m", "store": "x"}],
            accepted={"run-differs:-:-": {"reason": "known", "link": "not a web address"}},
        )
    )
    benign = parse(benign_html)
    assert_nothing_raw(html, page, benign)

    shown = visible(HOSTILE)
    # In the markup the hostile text is text: in the title, header, row labels, banner, tables.
    assert page.find_all("title")[0].text.endswith(shown)
    assert page.by_id("command").text == shown
    rows = page.by_id("matrix").find_all("tbody")[0].find_all("tr")
    assert {r.attrs["data-scenario"] for r in rows} == {shown, f"hostile-content{shown}"}
    row = next(r for r in rows if r.attrs["data-scenario"] == f"hostile-content{shown}")
    assert f"hostile-content{shown}" in row.find_all("th")[0].text
    assert shown in page.by_id("missed-banner").text
    assert shown in page.by_id("skipped").text and shown in page.by_id("baselines").text
    assert shown in page.by_id("excluded").text
    # An unknown verdict gets no class of its own making.
    classes = {c for e in page.iter() for c in e.classes}
    assert not any("<" in c or "onerror" in c for c in classes)
    # Groups and accepted entries: text, never a link unless a plain web address.
    groups = page.by_id("groups")
    assert shown in groups.find_all("li", "group")[0].text
    assert [g.text for g in groups.find_all("code", "g-replay")] == [shown, shown]
    accepted = page.by_id("accepted")
    assert shown in accepted.text and "javascript:alert(1)" in accepted.text
    # In the data block it survives intact (the script shows it with textContent).
    data = data_of(page)
    strings = set(data["strings"])
    assert shown in strings and f"{shown} started (pid 1)" in strings
    assert {c["verdict"] for c in data["cells"]} >= {shown}
    first = data["cells"][0]
    assert first["sides"] == [shown, shown]
    assert data["strings"][first["findings"][0]["ev"]] == f"{shown}\n{shown}"
    assert [data["strings"][i] for i in first["whole"][0]] == [
        shown,
        shown,
        visible(json.dumps([HOSTILE], ensure_ascii=False)),
    ]


def test_the_hostile_content_scenarios_payloads_appear_only_escaped() -> None:
    """A diverged cell of the real hostile-content scenario carries its payloads as evidence."""
    html_page = PAYLOADS["html"]
    evidence = cell(
        "hostile-content",
        "tool-batch",
        ["after-checkpoint:2"],
        "diverged",
        False,
        detail=f"session.runs[0].content: baseline {html_page!r}",
        findings=differs(
            "session.runs[0].messages[2].content", html_page, PAYLOADS["ansi"] + PAYLOADS["nul"]
        ),
        stderr_tail=PAYLOADS["unicode"] + PAYLOADS["json"],
        timeline=[[0.0, "worker started (pid 3)"], [0.1, f"gate tool:{html_page}:started"]],
    )
    html = render_report(document([evidence, cell("hostile-content", "tool", ["mid-model:1"])]))
    page = parse(html)
    for raw in ('<script>alert("pwned")</script>', 'onerror="alert(1)"', "<svg onload=", "<iframe"):
        assert raw not in html
    assert html.count("<script") == 2
    assert not [e for e in page.iter() if any(a.startswith("on") for a in e.attrs)]
    data = data_of(page)
    s = data["strings"]
    entry = data["cells"][0]
    assert s[entry["diff"]["baseline"]] == html_page
    assert s[entry["diff"]["actual"]] == visible(PAYLOADS["ansi"] + PAYLOADS["nul"])
    assert "\\x1b[31mRED" in s[entry["diff"]["actual"]]
    assert "\\x00" in s[entry["diff"]["actual"]]
    assert "<U+202E>gnp.exe" in s[entry["stderr"]]
    # the JSON block itself has no markup: < > & ' are \u escapes there
    block = page.by_id("kp-data").text
    assert "<" not in block and ">" not in block and "&" not in block


def test_visible_writes_out_what_a_terminal_or_browser_would_interpret() -> None:
    assert visible("a\x1b[31mb\x07\x00\r\n\tz\x7f") == "a\\x1b[31mb\\x07\\x00\\r\n\tz\\x7f"
    assert visible("x\u202ey\u2066") == "x<U+202E>y<U+2066>"
    assert visible("lone \ud800 surrogate") == "lone \ufffd surrogate"
    assert visible({"a": [1]}) == '{"a": [1]}'
    assert visible("emoji 👩‍💻 é") == "emoji 👩‍💻 é"


def test_the_page_encodes_even_with_lone_surrogates() -> None:
    doc = document([cell("research\ud800", "tool", ["after-checkpoint:1"], detail="\udfff")])
    render_report(doc).encode("utf-8")  # strict: raises on a surrogate


# -- the commands ----------------------------------------------------------------------------


def test_killpoint_report_renders_a_saved_json(small, tmp_path: Path, capsys) -> None:
    results = tmp_path / "results.json"
    results.write_text(json.dumps(small), encoding="utf-8")
    out = tmp_path / "deep" / "out.html"
    assert killpoint(["report", str(results), "-o", str(out)]) == 0
    assert capsys.readouterr().out.strip() == f"written: {out}"
    page = parse(out.read_text(encoding="utf-8"))
    assert len(page.by_id("matrix").find_all("button")) == len(small["cells"])


def test_documents_are_not_changed_by_rendering(small) -> None:
    before = copy.deepcopy(small)
    render_report(small)
    assert small == before


@pytest.mark.slow
def test_killpoint_matrix_writes_the_report_next_to_the_json(tmp_path: Path) -> None:
    """End to end: a real (tiny) campaign of the hostile-content scenario."""
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "killpoint.cli.main",
            "matrix",
            "--scenarios",
            "hostile-content",
            "--modes",
            "runs,tool-batch",
            "--points",
            "after-checkpoint:1,mid-batch:1:0",
            "--workers",
            "2",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert run.returncode in (0, 1), run.stderr[-3000:]
    doc = json.loads((tmp_path / "reports" / "reference-matrix.json").read_text())
    page = parse((tmp_path / "reports" / "reference-matrix.html").read_text(encoding="utf-8"))
    buttons = page.by_id("matrix").find_all("button")
    assert len(buttons) == len(doc["cells"]) >= 3
    assert [
        r.attrs["data-mode"] for r in page.by_id("matrix").find_all("tbody")[0].find_all("tr")
    ] == [
        "runs",
        "tool-batch",
    ]


def test_a_cell_reported_twice_shows_the_worse_verdict() -> None:
    twice = [
        cell("research", "tool", ["after-checkpoint:1"]),
        cell("research", "tool", ["after-checkpoint:1"], "diverged", False),
        cell("research", "tool", ["after-checkpoint:1"]),
    ]
    page = parse(render_report(document(twice)))
    row = page.by_id("matrix").find_all("tbody")[0].find_all("tr")[0]
    assert [b.attrs["data-c"] for b in row.find_all("button")] == ["1"]
    assert row.attrs["data-unexp"] == "1"


# -- findings, groups, accepted cells ----------------------------------------------------------


def finding(kind: str, sentence: str, path: str = "", **fields: Any) -> dict[str, Any]:
    evidence = tuple(fields.pop("evidence", ()))
    return Finding(kind, sentence, path=path, evidence=evidence, **fields).to_json()


CHARGED = [
    "charge_card started by pid 101 at +0.010 s, key k1",
    "charge_card started by pid 102 at +0.480 s, key k2",
]


@pytest.fixture
def grouped() -> dict[str, Any]:
    """Two causes over four unexpected cells (one accepted), and an accepted entry that no
    longer occurs: as `killpoint matrix --accept` writes it."""
    dup = finding(
        "effect-duplicated",
        "charge_card(amount=5) ran 1 more time(s) than in the baseline",
        "ledger",
        tool="charge_card",
        evidence=CHARGED,
        expected_value=0,
        actual_value=1,
    )
    usage = finding(
        "usage-differs",
        "runs[0].metrics.total_tokens: baseline 10, resumed 20",
        "runs[0].metrics.total_tokens",
        expected_value=10,
        actual_value=20,
    )
    hung = finding("hung", "the resumer passed its time limit (30 s)")
    cells = [
        cell("research", "tool", ["after-checkpoint:1"], "duplicated", False,
             findings=[usage, dup], duplicates=1, bound=0,
             diff=[{"path": "session.runs[0].metrics.total_tokens", "expected": 10, "actual": 20},
                   {"path": "session.runs[0].metrics.time", "expected": 1.5, "actual": 2.5}]),
        cell("research", "tool", ["mid-batch:1:0"], "duplicated", False, findings=[dup], duplicates=1),
        cell("parallel-fetch", "tool", ["sigstop:2"], "diverged", False, findings=[usage],
             sides={"expected": "store after the takeover", "actual": "store after the stale worker woke"}),
        cell("parallel-fetch", "tool", ["lock-held:2"], "hung", False, findings=[hung]),
        cell("parallel-fetch", "tool", ["after-checkpoint:2"]),
    ]  # fmt: skip
    accepted = {
        "hung:-:-": Accepted("hung:-:-", "the lock waits out its lease", "https://example.org/7"),
        "effect-lost:send_email:ledger": Accepted("effect-lost:send_email:ledger", "fixed in 2.1"),
    }
    results = [CellResult.from_json(dict(c)) for c in cells]
    apply_accepted(results, accepted)
    for c, r in zip(cells, results, strict=True):
        c["accepted"], c["findings"] = r.accepted, r.findings
    doc = document(cells, schema="killpoint.matrix/2")
    doc["groups"] = [g.to_json() for g in group_findings(results)]
    doc["accepted"] = {k: {"reason": a.reason, "link": a.link} for k, a in accepted.items()}
    doc["summary"]["accepted"] = 1
    # The usage-only cell is unexpected at low severity: shown apart, not failing.
    doc["summary"]["unexpected"] = 2
    doc["summary"]["low"] = 1
    return doc


def test_groups_come_before_the_matrix_with_count_explanation_example_and_replay(
    grouped,
) -> None:
    html = render_report(grouped)
    page = parse(html)
    assert html.index('id="groups"') < html.index('id="matrix"')
    section = page.by_id("groups")
    assert section.find_all("h2")[0].text.startswith("3 groups of findings")
    items = section.find_all("li", "group")
    keys = [li.find_all("span", "g-key")[0].find_all("code")[0].text for li in items]
    assert keys == [g["key"] for g in grouped["groups"]]
    by_key = dict(zip(keys, items, strict=True))
    dup = by_key["effect-duplicated:charge_card:ledger"]
    assert dup.find_all("b", "g-count")[0].text == "2"
    assert FINDING_KINDS["effect-duplicated"].meaning in dup.text
    assert "charge_card(amount=5) ran 1 more time(s)" in dup.text
    example = dup.find_all("p", "g-example")[0].find_all("button")[0]
    data = data_of(page)
    assert (
        data["strings"][data["cells"][int(example.attrs["data-c"])]["id"]]
        == (grouped["cells"][0]["id"])
    )
    assert dup.find_all("code", "g-replay")[0].text == grouped["cells"][0]["replay"]
    assert dup.find_all("button", "copy")[0].text == "Copy"
    # Each group's cells, for the filter: data indices of the cells that have it.
    index = {data["strings"][c["id"]]: n for n, c in enumerate(data["cells"])}
    for n, g in enumerate(grouped["groups"]):
        assert sorted(data["groups"][n]) == sorted(index[c] for c in g["cells"])
    # The accepted group says so and why; it does not count as failing.
    hung = by_key["hung:-:-"]
    assert "accepted" in hung.classes and "the lock waits out its lease" in hung.text
    assert page.by_id("f-group-clear").tag == "button"


def test_a_document_without_groups_is_grouped_for_the_report(grouped) -> None:
    del grouped["groups"]
    page = parse(render_report(grouped))
    keys = [c.text for c in page.by_id("groups").find_all("code") if ":" in c.text]
    assert (
        "effect-duplicated:charge_card:ledger" in keys
        and "usage-differs:-:runs[*].metrics.total_tokens" in keys
    )


def test_accepted_cells_are_shown_and_counted_apart_and_fixed_entries_listed(grouped) -> None:
    page = parse(render_report(grouped))
    tiles = {
        t.find_all("span")[-1].text: t.find_all("b")[0].text
        for t in page.by_id("summary").find_all("div", "tile")
    }
    assert (tiles["unexpected, failing"], tiles["accepted (by design or known), not failing"]) == (
        "2",
        "1",
    )
    assert page.by_id("status").text == "✗ 2 unexpected from 1 cause"
    rows = page.by_id("matrix").find_all("tbody")[0].find_all("tr")
    fetch = next(r for r in rows if r.attrs["data-scenario"] == "parallel-fetch")
    # its other unexpected cell is of low severity only: shown, not counted as failing
    assert (fetch.attrs["data-unexp"], fetch.attrs["data-acc"]) == ("0", "1")
    held = next(td for td in fetch.find_all("td") if "v-hung" in td.classes)
    assert "a" in held.classes and "x" not in held.classes
    assert "accepted" in held.find_all("button")[0].attrs["title"]
    table = page.by_id("accepted-list")
    entries = {tr.find_all("code")[0].text: tr for tr in table.find_all("tbody")[0].find_all("tr")}
    met, fixed = entries["hung:-:-"], entries["effect-lost:send_email:ledger"]
    assert "the lock waits out its lease" in met.text and "1 cell" in met.text
    assert met.find_all("a")[0].attrs == {
        "href": "https://example.org/7",
        "rel": "noopener noreferrer",
    }
    # a whole campaign did not meet it: it no longer occurs (never "fixed")
    assert "gone" in fixed.classes and "fixed in 2.1" in fixed.text
    assert "no longer occurs" in fixed.text
    assert "1 no longer occurs" in page.by_id("accepted-title").text
    # a campaign narrowed to some points may not have run it: not exercised
    narrowed = copy.deepcopy(grouped)
    narrowed["narrowed"] = "--points kills"
    narrowed["accepted"]["effect-lost:send_email:ledger"]["this_campaign"] = "not exercised"
    page = parse(render_report(narrowed))
    title = page.by_id("accepted-title").text
    assert "1 not exercised" in title and "fixed" not in title and "no longer" not in title
    row = next(
        tr
        for tr in page.by_id("accepted-list").find_all("tbody")[0].find_all("tr")
        if tr.find_all("code")[0].text == "effect-lost:send_email:ledger"
    )
    assert "not exercised" in row.text and "fixed" not in row.classes
    assert "--points kills" in page.by_id("accepted-narrowed").text
    # every unexpected finding of an accepted cell is accepted, with its reason
    data = data_of(page)
    entry = next(c for c in data["cells"] if c.get("accepted"))
    assert [data["strings"][f["a"]] for f in entry["findings"]] == ["the lock waits out its lease"]
    # all accepted: the status says so
    only_accepted = copy.deepcopy(grouped)
    only_accepted["cells"] = [c for c in grouped["cells"] if c["expected"] or c["accepted"]]
    only_accepted["summary"]["unexpected"] = 0
    assert parse(render_report(only_accepted)).by_id("status").text == (
        "✓ every verdict expected or accepted"
    )


def test_the_list_of_unexpected_cells_is_sortable(grouped) -> None:
    page = parse(render_report(grouped))
    table = page.by_id("list")
    sorts = [b.attrs["data-sort"] for b in table.find_all("button", "sort")]
    assert sorts == ["rank", "scenario", "kind", "point"]
    rows = table.find_all("tbody")[0].find_all("tr")
    unexpected = [c for c in grouped["cells"] if not c["expected"]]
    assert len(rows) == len(unexpected) == 4
    # failing first, most severe first; the accepted cell last
    assert [r.attrs["data-point"] for r in rows] == [
        "after-checkpoint:1", "mid-batch:1:0", "sigstop:2", "lock-held:2"
    ]  # fmt: skip
    assert [r.attrs["data-kind"] for r in rows] == [
        "effect-duplicated", "effect-duplicated", "usage-differs", "hung"
    ]  # fmt: skip
    assert [int(r.attrs["data-rank"]) for r in rows] == [RANK[c] for c in ("duplicated", "duplicated", "diverged", "hung")]  # fmt: skip
    assert rows[-1].classes == {"a"} and "accepted" in rows[-1].text
    assert "checkpoint 2 is written (1 landed)" in rows[-1].text  # the point in words
    assert page.by_id("v-list").text == "list of unexpected cells (2, 1 low, 1 accepted)"
    data = data_of(page)
    for r in rows:
        entry = data["cells"][int(r.find_all("button")[0].attrs["data-c"])]
        assert "+".join(entry["schedule"]) == r.attrs["data-point"]


def test_the_legend_has_every_verdict_cell_and_registered_kind() -> None:
    """Tied to the registries: a new crash-point kind or verdict cannot be left out."""
    page = parse(render_report(document([cell("research", "tool", ["after-checkpoint:1"])])))
    verdicts = {
        tr.attrs["data-verdict"]: [td.text for td in tr.find_all("td")]
        for tr in page.by_id("legend-verdicts").find_all("tr")
    }
    assert list(verdicts) == [v.name for v in VERDICTS]
    for v in VERDICTS:
        assert verdicts[v.name] == [v.glyph, v.name, v.meaning]
    point_kinds = {
        tr.attrs["data-kind"]: tr.find_all("td")[1].text
        for tr in page.by_id("legend-kinds").find_all("tr")
    }
    assert point_kinds == {k.name: k.meaning for k in kinds.REGISTRY.values()}
    assert point_kinds["lock-held"]  # the kind that had no meaning in the legend
    finding_kinds = [tr.attrs["data-kind"] for tr in page.by_id("legend-findings").find_all("tr")]
    assert finding_kinds == list(FINDING_KINDS)
    # every verdict but `missed` (hatched) has its colours in the page's style
    style = page.find_all("style")[0].text
    for v in VERDICTS:
        if v.name != "missed":
            assert f".cell.v-{v.name}.x" in style and f"--{v.name}-bg:" in style, v.name
    cells_legend = page.by_id("legend-cells").text
    for what in ("expected", "unexpected", "accepted", "not applicable"):
        assert what in cells_legend
    # the not-applicable cell of the matrix is the legend's
    assert page.by_id("legend").find_all("span", "na")[0].text == "·"


def test_the_schedule_says_each_points_own_numbers() -> None:
    every = [
        cell("research", "tool", [str(p)])
        for p in (
            kinds.parse_point(f"{k.name}:2:1" if k.arity == 2 else f"{k.name}:2")
            for k in kinds.REGISTRY.values()
        )
    ]
    every.append(cell("research", "tool", ["after-checkpoint:1", "mid-model:2"]))
    data = data_of(parse(render_report(document(every))))
    s = data["strings"]
    says = {"+".join(c["schedule"]): [s[i] for i in c["says"]] for c in data["cells"]}
    assert says["after-checkpoint:1+mid-model:2"] == [
        "checkpoint 1 has landed, 2 has not; the worker is killed",
        "the request for model turn 2 was sent, no reply yet; the worker is killed",
    ]
    for k in kinds.REGISTRY.values():
        point = kinds.parse_point(f"{k.name}:2:1" if k.arity == 2 else f"{k.name}:2")
        assert says[str(point)] == [k.describe(point)]
        assert "2" in says[str(point)][0]
    # a point this version does not know says nothing rather than something wrong
    odd = data_of(parse(render_report(document([cell("r", "tool", ["no-such:1"])]))))
    assert odd["strings"][odd["cells"][0]["says"][0]] == ""


def test_the_panel_data_has_every_finding_the_ledger_the_sides_and_the_whole_diff(
    grouped,
) -> None:
    data = data_of(parse(render_report(grouped)))
    s = data["strings"]
    first = data["cells"][0]
    assert [(f["k"], f["s"], f.get("x", False)) for f in first["findings"]] == [
        ("usage-differs", "low", False),
        ("effect-duplicated", "high", False),
    ]
    dup = first["findings"][1]
    assert s[dup["t"]] == "charge_card(amount=5) ran 1 more time(s) than in the baseline"
    assert (s[dup["p"]], s[dup["tool"]]) == ("ledger", "charge_card")
    assert s[dup["ev"]].split("\n") == CHARGED
    assert (s[dup["ex"]], s[dup["ac"]]) == ("0", "1")
    assert first["sides"] == ["baseline", "resumed run"]
    assert [[s[i] for i in leaf] for leaf in first["whole"]] == [
        ["session.runs[0].metrics.total_tokens", "10", "20"],
        ["session.runs[0].metrics.time", "1.5", "2.5"],
    ]
    assert first.get("whole_more", 0) == 0
    sigstop = data["cells"][2]
    assert sigstop["sides"] == ["store after the takeover", "store after the stale worker woke"]


def test_long_evidence_and_diffs_are_clipped_with_a_count() -> None:
    many = finding("effect-duplicated", "x ran again", "ledger", tool="x",
                   evidence=[f"line {n}" for n in range(500)])  # fmt: skip
    leaves = [{"path": f"session.s[{n}]", "expected": n, "actual": -n} for n in range(260)]
    big = cell("r", "tool", ["after-checkpoint:1"], "duplicated", False, findings=[many] * 70)
    big["diff"] = leaves
    data = data_of(parse(render_report(document([big]))))
    entry = data["cells"][0]
    assert (len(entry["findings"]), entry["findings_more"]) == (50, 20)
    lines = data["strings"][entry["findings"][0]["ev"]].split("\n")
    assert len(lines) == 61 and lines[-1].startswith("… 440 more lines")
    assert (len(entry["whole"]), entry["whole_more"]) == (200, 60)


def test_the_command_in_the_header_is_redacted(small) -> None:
    small["command"] = (
        "killpoint matrix --store postgresql://kp:s3cret-pass@db.example:5432/kp --seed 1"
    )
    html = render_report(small)
    assert "s3cret-pass" not in html
    assert parse(html).by_id("command").text == (
        "killpoint matrix --store postgresql://kp:***@db.example:5432/kp --seed 1"
    )


@pytest.mark.parametrize(
    ("content", "says"),
    [
        ("{}", "is not a killpoint matrix report"),
        ("[]", "is not a killpoint matrix report"),
        ('{"schema": "something/else", "cells": []}', "is not a killpoint matrix report"),
        ('{"schema": "killpoint.matrix/2"}', "has no list of cells"),
        ('{"schema": "killpoint.matrix/2", "cells": [{"id": "x"}]}', "cell 0: a cell lacks"),
        ("not json at all", "is not JSON"),
        (None, "cannot read"),
    ],
)
def test_killpoint_report_refuses_what_is_not_a_report(
    tmp_path: Path, capsys, content: str | None, says: str
) -> None:
    source = tmp_path / "results.json"
    if content is not None:
        source.write_text(content, encoding="utf-8")
    out = tmp_path / "out.html"
    assert killpoint(["report", str(source), "-o", str(out)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and says in lines[0] and str(source) in lines[0], captured.err
    assert not out.exists()


def test_the_deciding_finding_is_the_unexpected_one_and_an_ok_cell_has_none() -> None:
    """An allowed loss never stands for a cell whose cancel was ignored: the list names the
    cancel and the panel's difference is the cancel's; an `ok` cell whose only finding is an
    allowed repeat shows no deciding difference."""
    lost = finding(
        "run-lost", "run 1 is not in the store after the crash", "runs[0]", expected=True
    )
    cancel = finding(
        "cancel-ignored",
        "a cancel was requested during model turn 3, yet model turn 4 was requested",
        "model",
        expected_value=3,
        actual_value=[4],
    )
    repeat = finding(
        "effect-repeated", "search ran again once", "ledger", actual_value=1, expected=True
    )
    cells = [
        cell("cancel", "runs", ["mid-batch:4:0"], "diverged", False, findings=[lost, cancel]),
        cell("research", "tool", ["mid-batch:1:0"], "ok", True, findings=[repeat]),
    ]
    page = parse(render_report(document(cells)))
    (row,) = page.by_id("list").find_all("tbody")[0].find_all("tr")
    assert row.attrs["data-kind"] == "cancel-ignored"
    data = data_of(page)
    s = data["strings"]
    cancelled, fine = data["cells"]
    assert s[cancelled["diff"]["path"]] == "model"
    assert "diff" not in fine


def test_findings_without_a_crash_have_their_own_section_and_fail_the_page(small) -> None:
    """A row-level group (the baseline shows it) is listed in its own section with its
    rows, escaped, and the page does not say every verdict is expected."""
    good = document(
        [c for c in small["cells"] if c["expected"]],
        without_crash=[
            {
                "key": "cancel-late:-:model@no-crash",
                "kind": "cancel-late",
                "tool": None,
                "path": "model",
                "severity": "high",
                "verdict": "diverged",
                "meaning": "",
                "count": 1,
                "rows": ["reference/cancel/tool-batch/sqlite"],
                "example": "model turn(s) 4 were requested <b>late</b>",
                "example_row": "reference/cancel/tool-batch/sqlite",
                "replay": "killpoint matrix --runtime reference --scenarios cancel",
                "accepted": None,
            }
        ],
    )
    html = render_report(good)
    assert "<b>late</b>" not in html
    page = parse(html)
    section = page.by_id("without-crash")
    assert "Happens without a crash: 1 group" in section.text
    assert "reference/cancel/tool-batch/sqlite" in section.text
    assert "<b>late</b>" in section.text  # shown as text
    assert page.by_id("status").text == "✗ 1 without a crash"


def test_headings_of_groups_of_one_kind_never_read_the_same() -> None:
    """Two acknowledged-lost groups, two run-differs groups, two tools' repeats: each
    heading names its path (or tool), in the groups and in the rows' section alike."""
    from tests.harness.report.test_terminal import lookalike_cells

    results = lookalike_cells()
    groups = [g.to_json() for g in group_findings(results)]
    rows = [
        {**g, "key": f"{g['key']}@no-crash", "rows": ["reference/cancel/runs/sqlite"]}
        for g in groups
    ]
    doc = document([r.to_json() for r in results], groups=groups, without_crash=rows)
    page = parse(render_report(doc))
    for section in ("groups", "without-crash"):
        heads = [  # what holds the count: "2 cells: KIND (tool T) at PATH"
            " ".join(count.parent.text.split())
            for li in page.by_id(section).find_all("li", "group")
            for count in li.find_all("b", "g-count")
            if count.parent is not None
        ]
        assert len(heads) == len(groups) == len(set(heads)), heads
        for g, shown in zip(groups, heads, strict=True):
            assert g["kind"] in shown and g["path"] in shown and (g["tool"] or "") in shown
    assert "2 cells: acknowledged-lost at runs[*].status" in " ".join(
        page.by_id("groups").text.split()
    )


def planned_rows(*rows: tuple[str, str, list[str] | None]) -> list[dict[str, Any]]:
    return [
        {"runtime": "reference", "scenario": s, "mode": m, "store": "sqlite", "schedules": p}
        for s, m, p in rows
    ]


def test_an_interrupted_report_draws_cells_not_run_apart_from_not_applicable() -> None:
    """With the plan kept: a planned cell without a result is "not run" (hatched), one
    that was never planned is "not applicable"; a planned column no cell reached is still
    drawn; rows never started are in the matrix and named at the top."""
    cells = [
        cell("research", "tool-batch", ["after-checkpoint:1"]),
        cell("research", "tool-batch", ["after-checkpoint:2"], "diverged", False),
        cell("research", "runs", ["after-checkpoint:1"], "lost", True),
    ]
    doc = document(cells, schema="killpoint.matrix/2", interrupted=True)
    doc["summary"]["planned"] = 6
    doc["planned_cells"] = planned_rows(
        ("research", "tool-batch", ["after-checkpoint:1", "after-checkpoint:2",
                                    "after-checkpoint:3", "sigstop:1"]),
        ("research", "runs", ["after-checkpoint:1"]),
        ("parallel-fetch", "tool", ["after-checkpoint:1"]),
        ("cancel", "runs", None),
    )  # fmt: skip
    page = parse(render_report(doc))
    matrix = page.by_id("matrix")
    body = matrix.find_all("tbody")[0]
    rows = {(r.attrs["data-scenario"], r.attrs["data-mode"]): r for r in body.find_all("tr")}
    assert set(rows) == {
        ("research", "tool-batch"), ("research", "runs"), ("parallel-fetch", "tool"),
        ("cancel", "runs"),
    }  # fmt: skip
    columns = [th.attrs["title"] for th in matrix.find_all("th", "col")]
    assert "sigstop:1" in columns  # planned, and no cell of it ran
    index = {key: n + 1 for n, key in enumerate(columns)}  # +1: the row heading

    def slot(row: tuple[str, str], key: str) -> Element:
        return [td for td in rows[row].children if isinstance(td, Element)][index[key]]

    for row, key in (
        (("research", "tool-batch"), "after-checkpoint:3"),
        (("research", "tool-batch"), "sigstop:1"),
        (("parallel-fetch", "tool"), "after-checkpoint:1"),
    ):
        td = slot(row, key)
        assert "nr" in td.classes and "not run" in td.attrs["title"], (row, key)
    for row, key in (
        (("research", "runs"), "sigstop:1"),
        (("parallel-fetch", "tool"), "sigstop:1"),
    ):
        td = slot(row, key)
        assert "na" in td.classes and td.attrs["title"] == "not applicable", (row, key)
    assert len(matrix.find_all("td", "nr")) - 1 == 3  # and the row stopped before its plan
    stopped = rows["cancel", "runs"]
    assert "wide" in stopped.classes
    assert stopped.find_all("td", "nr")[0].text.startswith("not run: the campaign stopped")
    banner = page.by_id("interrupted").text
    assert "3 planned cells did not run, and 1 row stopped before its cells were planned" in (
        " ".join(banner.split())
    )
    assert "parallel-fetch / tool / sqlite" in banner and "cancel / runs / sqlite" in banner
    assert "research / runs" not in banner  # its one planned cell ran
    assert page.by_id("legend-not-run").text.strip() == "not run"


def test_a_row_whose_baseline_failed_is_named_with_the_crash_cells_not_planned(
    failed_row: CampaignResult,  # noqa: F811
) -> None:
    """A real campaign whose row's baseline failed: a banner names the row, how many crash
    cells were not planned and why; the row's heading marks it, and its one cell (still
    there, with its evidence) says it made no crash."""
    page = parse(render_report(document_of(failed_row)))
    banner = " ".join(page.by_id("not-planned").text.split())
    assert "Not planned: 1 row whose baseline failed" in banner
    assert (
        "research / tool-batch / sqlite: its baseline failed, so the 3 crash cells its run "
        f"offered were not planned: {PROBLEM}"
    ) in banner
    (row,) = page.by_id("matrix").find_all("tbody")[0].find_all("tr")
    (mark,) = row.find_all("span", "np")
    assert mark.text == "not planned" and PROBLEM in mark.attrs["title"]
    (button,) = row.find_all("button")
    assert button.attrs["title"].startswith("no crash (its baseline failed, so the 3 crash")


def test_the_cell_of_a_row_whose_baseline_failed_is_shown_as_no_crash_everywhere(
    failed_row: CampaignResult,  # noqa: F811
) -> None:
    """The campaign ran `--points after-checkpoint`; the row's one cell is planned at
    `mid-model:1` (its id keeps it, for replay) but makes no crash. The page drew it under a
    `mid-model` column, listed it at crash point `mid-model:1` with that point's "the
    worker is killed", and titled its panel so. Now: a `no crash` column of its own, and
    every place that said the point says no crash."""
    from killpoint.report.planned import NO_CRASH, NO_CRASH_MEANS

    document = document_of(failed_row)
    (cell,) = document["cells"]
    page = parse(render_report(document))
    matrix = page.by_id("matrix")
    head = matrix.find_all("thead")[0]
    (group,) = head.find_all("th", "grp")
    assert (group.text, group.attrs["title"]) == ("no crash", NO_CRASH_MEANS)
    (column,) = head.find_all("th", "col")
    assert column.attrs["title"] == NO_CRASH
    for element in [*matrix.iter(), *page.by_id("list").iter()]:  # no word of the point
        said = [element.text, *element.attrs.values()]
        assert not [t for t in said if "mid-model" in t], element.tag
    (listed,) = page.by_id("list").find_all("tbody")[0].find_all("tr")
    assert listed.attrs["data-point"] == NO_CRASH
    point = listed.find_all("td", "point")[0]
    assert " ".join(point.text.split()) == f"{NO_CRASH}{NO_CRASH_MEANS}"
    data = data_of(page)
    strings = data["strings"]
    (panel,) = data["cells"]
    assert panel["schedule"] == [NO_CRASH]
    assert [strings[n] for n in panel["says"]] == [NO_CRASH_MEANS]
    assert strings[panel["id"]] == cell["id"]  # the id stays: links, replay
    assert strings[panel["shown"]] == f"{'/'.join(ROW)} (no crash: its baseline failed)"
    assert strings[panel["replay"]] == cell["replay"]
    for example in page.find_all("p", "g-example"):  # the cause's and the group's
        text = " ".join(example.text.split())
        assert text.startswith(f"For example {'/'.join(ROW)} (no crash: its baseline failed):")


def test_a_stopped_campaign_has_a_banner_saying_what_it_covered(
    stopped_row: CampaignResult,  # noqa: F811
) -> None:
    """`--fail-fast`: the page said nothing of the stop (it is not an interrupt, and every
    planned cell had run). A banner says it, in the terminal's words, with the row that is
    not planned rather than covered."""
    page = parse(render_report(document_of(stopped_row)))
    banner = page.by_id("stopped")
    assert banner.find_all("h2")[0].text == "Stopped early"
    assert banner.find_all("p")[0].text == (
        "it stopped at its first unexpected cell (--fail-fast): 1 of 1 cell ran; 1 row not "
        "planned: its baseline failed"
    )
    rows = [li.text for li in banner.find_all("li")]
    assert rows == ["research/tool-batch: its baseline failed; no crash cell planned"]


def test_a_report_without_its_plan_reads_as_before() -> None:
    """Written before the plan was kept: an empty cell of an interrupted report may be
    either, and says so; nothing is drawn "not run"."""
    doc = document([cell("research", "tool-batch", ["after-checkpoint:1"])], interrupted=True)
    page = parse(render_report(doc))
    empty = page.by_id("matrix").find_all("td", "nr")
    assert empty == []
    assert "legend-not-run" not in render_report(doc)
    assert "not-run" not in [e.attrs.get("id") for e in page.iter()]


# -- causes, by design, severity (issue 56) ------------------------------------------------------


def agno_document(accept: bool = False) -> dict[str, Any]:
    """Issue 56's agno campaign in small (tests.harness.judge.test_causes), as the campaign
    writes it; `accept`: with the cancel accepted by design."""
    from killpoint.engine.campaign import CampaignResult
    from killpoint.engine.cell_log import CellLog
    from killpoint.engine.options import CampaignConfig
    from killpoint.judge.groups import Accepted, apply_accepted
    from killpoint.report.document import to_document
    from tests.harness.judge.test_causes import campaign

    cells = campaign()
    accepted = {}
    if accept:
        key = "cancel-ignored:-:model"
        accepted = {key: Accepted(key, "by design in agno: cancellation lives in memory")}
        apply_accepted(cells, accepted)
    cells[0].duplicates, cells[0].bound = 3, 1
    result = CampaignResult(CampaignConfig(runtime="agno"), 7, CellLog(cells), accepted=accepted)
    return to_document(result, command=["killpoint", "matrix", "--runtime", "agno"])


def test_every_cause_is_on_the_page_most_impact_first_without_an_inner_scroll_box() -> None:
    """Issue 56: the groups were symptoms, the largest ninth, in a box that showed three
    at a time. The causes come first, every one in the page's own flow (no list that
    scrolls inside the page), most impact first, each with its sentence and its groups."""
    doc = agno_document()
    html = render_report(doc)
    page = parse(html)
    assert html.index('id="causes"') < html.index('id="groups"') < html.index('id="matrix"')
    items = page.by_id("cause-list").find_all("li", "cause")
    assert [li.find_all("code")[0].text for li in items] == [c["name"] for c in doc["causes"]]
    assert items[0].find_all("code")[0].text.startswith("tool-executions-lost")
    assert "keeps only the tool executions it ran itself" in items[0].text
    first_groups = [b.text for b in items[1].find_all("ul", "c-groups")[0].find_all("button")]
    assert "status-differs at runs[*].status" in first_groups
    css = (Path(__file__).parents[3] / "harness/report/templates/report.css").read_text()
    for rule in re.findall(r"[^{}]*(?:cause-list|group-list)[^{}]*\{[^}]*\}", css):
        assert "max-height" not in rule and "overflow" not in rule, rule


def test_a_cause_accepted_by_design_is_marked_and_counted_apart() -> None:
    """Issue 56: nothing marked what docs/agno.md calls by design. A cause whose findings
    are accepted by a reason that says so is marked "by design", dashed, failing nothing."""
    page = parse(render_report(agno_document(accept=True)))
    (cancel,) = [
        li for li in page.by_id("cause-list").find_all("li", "cause") if "cancel-ignored" in li.text
    ]
    assert "accepted" in cancel.classes
    chips = [s.text for s in cancel.find_all("span", "chip") if "acc" in s.classes]
    assert chips == ["by design"]
    assert "cancellation lives in memory" in cancel.text


def test_the_duplicates_tile_says_within_and_beyond_the_bound() -> None:
    """Issue 56: the tile said 124 duplicates, not that 75 were beyond the bound."""
    page = parse(render_report(agno_document()))
    tile = page.by_id("tile-duplicates")
    assert tile.find_all("b")[0].text == "3"
    assert tile.find_all("span")[0].text == "duplicate effects: 1 within the bound, 2 beyond"


def test_cells_of_low_findings_only_are_shown_apart_and_not_failing() -> None:
    """The token counts alone: a tile of their own, dotted cells, not in the failing count."""
    doc = agno_document()
    page = parse(render_report(doc))
    assert page.by_id("tile-low").find_all("b")[0].text == "3"
    assert doc["summary"]["low"] == 3
    lows = [td for td in page.by_id("matrix").find_all("td") if "l" in td.classes]
    assert len(lows) == 3
    assert all("low severity only" in td.find_all("button")[0].attrs["title"] for td in lows)


def test_the_not_planned_banner_keeps_the_tracebacks_lines_escaped() -> None:
    """A baseline whose run raised: its problem is a sentence, then its worker's log's end
    (a traceback). The banner ran the traceback into the sentence's paragraph; now the
    sentence is the item's text and the traceback a block of its own, its lines kept, and
    every piece of it escaped (a frame's source can hold markup)."""
    sentence = "the baseline run failed (error): IndexError: list index out of range"
    traceback = (
        '  File "/srv/app/myagent/runtime.py", line 215, in _loop\n'
        '    step = plan[index] or "<script>alert(1)</script>"\n'
        "IndexError: list index out of range"
    )
    row = {"runtime": "reference", "scenario": "research", "mode": "tool-batch"}
    doc = document(
        [cell("research", "tool-batch", [str(kinds.stand_in())], "run-failed", False)],
        baselines=[
            {**row, "store": "sqlite", "checkpoints": 0, "seconds": 1.0,
             "problem": f"{sentence}\n--- baseline stderr ---\n{traceback}",
             "not_planned": True, "cells_not_planned": None},
        ],
    )  # fmt: skip
    html = render_report(doc)
    page = parse(html)
    (item,) = page.by_id("not-planned").find_all("li")
    (block,) = item.find_all("pre")
    assert traceback == block.text
    (summary,) = item.find_all("summary")
    assert summary.text == "baseline stderr, its end"
    assert item.text.startswith(
        "research / tool-batch / sqlite: its baseline failed, so its points were not planned: "
        f"{sentence}baseline stderr, its end"  # the sentence alone, then the block
    ), item.text
    assert "<script>alert" not in html
    assert not [e for e in page.iter() if e.tag == "script" and "alert" in e.text]
