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

from killpoint.cli import main as killpoint
from killpoint.report import STDERR_CHARS, render_report, visible
from killpoint.scenarios.builtin.hostile_content import PAYLOADS
from tests.benchmarks.report_size import SIZE_LIMIT, summary_of, synthetic_document

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
        "unexpected": "6",
        "expected losses": "1",
        "duplicate effects": "3",
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
    entry = data_of(parse(render_report(document([evidence]))))["cells"][0]
    assert [[k, lane] for _, _, k, lane in entry["timeline"]] == [
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
    assert (entry["verdict"], entry["expected"]) == ("diverged", False)
    assert s[entry["detail"]] == evidence["detail"]
    assert {k: s[v] for k, v in entry["diff"].items()} == {
        "path": "session.runs[0].content",
        "baseline": "a",
        "actual": "7",
    }
    assert entry["store"] == {"checkpoints": 3, "runs": [{"run": 1, "status": "RUNNING"}]}
    assert s[entry["stderr"]] == evidence["stderr_tail"]
    assert [[t, s[i], k, lane] for t, i, k, lane in entry["timeline"]] == evidence["timeline"]
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


def test_two_thousand_cells_stay_under_five_megabytes() -> None:
    doc = synthetic_document(2000)
    html = render_report(doc)
    size = len(html.encode("utf-8"))
    assert len(doc["cells"]) == 2000
    assert size < SIZE_LIMIT, f"{size} bytes"
    page = parse(html)
    assert len(page.by_id("matrix").find_all("button")) == 2000


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
    return doc


def test_hostile_strings_in_every_field_stay_text() -> None:
    doc = hostile_everywhere()
    html = render_report(doc)
    page = parse(html)
    # A benign page with the same parts (a missed banner, skipped rows, baselines).
    benign_html = render_report(
        document(
            [cell("r", "tool", ["after-checkpoint:1"], "missed", False)],
            skipped=[{"runtime": "r", "scenario": "s", "mode": "m", "reason": "x"}],
            baselines=[{"runtime": "r", "scenario": "s", "mode": "m", "store": "x"}],
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
    # In the data block it survives intact (the script shows it with textContent).
    data = data_of(page)
    strings = set(data["strings"])
    assert shown in strings and f"{shown} started (pid 1)" in strings
    assert {c["verdict"] for c in data["cells"]} >= {shown}


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
    assert capsys.readouterr().out.strip() == str(out)
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
            "killpoint.cli",
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
