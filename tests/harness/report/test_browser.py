"""The report in a real browser: headless Chromium (Debian's `chromium`) opens the file from
disk, a user filters to the unexpected cells and opens one, and no script from run content
ever runs.

Driven over the DevTools protocol on `--remote-debugging-pipe` (fds 3 and 4, NUL-separated
JSON) with the standard library only: no driver package, no browser download, no port.
Every wait is on the browser: a reply, a protocol event, or the process's exit.

Also a tool: `python -m tests.harness.report.test_browser REPORT.html PNG [--cell N]
[--unexpected]` saves a screenshot of a rendered report. docs/report.png is a full
`killpoint matrix` report with cell 1032 open.
"""

from __future__ import annotations

import argparse
import base64
import fcntl
import json
import os
import select
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

CHROMIUM = os.environ.get("KILLPOINT_CHROMIUM", "/usr/bin/chromium")
REPORTS = Path(__file__).resolve().parents[3] / "reports"
TIMEOUT = 60.0
WIDTH, HEIGHT = 1440, 900

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--no-default-browser-check",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--mute-audio",
    f"--window-size={WIDTH},{HEIGHT}",
)


class BrowserError(RuntimeError):
    """The browser said no, went away, or did not answer in time."""


class Chromium:
    """One headless Chromium and one page, over the DevTools pipe."""

    def __init__(self, binary: str = CHROMIUM) -> None:
        self.profile = tempfile.mkdtemp(prefix="killpoint-chromium-")
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()

        def plumb() -> None:  # in the child: the pipe goes on fds 3 (commands) and 4 (replies)
            a = fcntl.fcntl(to_browser_r, fcntl.F_DUPFD_CLOEXEC, 10)
            b = fcntl.fcntl(from_browser_w, fcntl.F_DUPFD_CLOEXEC, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.process = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={self.profile}", "--remote-debugging-pipe"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            close_fds=False,  # fds are non-inheritable by default; only 3 and 4 pass
            preexec_fn=plumb,
        )
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next_id = 0
        self.events: list[dict[str, Any]] = []
        self.session = ""
        try:
            target = self.call("Target.createTarget", url="about:blank")["targetId"]
            self.session = self.call("Target.attachToTarget", targetId=target, flatten=True)[
                "sessionId"
            ]
            for domain in ("Page", "Runtime", "Log"):
                self.call(f"{domain}.enable")
            # A page in a headless browser is never focused; the clipboard wants focus.
            self.call("Emulation.setFocusEmulationEnabled", enabled=True)
            self.call(
                "Browser.grantPermissions",
                permissions=["clipboardReadWrite", "clipboardSanitizedWrite"],
            )
            self.call(
                "Emulation.setDeviceMetricsOverride",
                width=WIDTH,
                height=HEIGHT,
                deviceScaleFactor=1,
                mobile=False,
            )
        except BaseException:
            self.close()
            raise

    # -- the protocol ---------------------------------------------------------------------

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("chromium did not answer in time")
            ready, _, _ = select.select([self._from_browser], [], [], left)
            if not ready:
                continue
            chunk = os.read(self._from_browser, 1 << 20)
            if not chunk:
                raise BrowserError(f"chromium closed the pipe: {self._stderr()}")
            self._buffer += chunk
        message, _, self._buffer = self._buffer.partition(b"\0")
        return json.loads(message)

    def call(self, method: str, timeout: float = TIMEOUT, **params: Any) -> dict[str, Any]:
        self._next_id += 1
        request: dict[str, Any] = {"id": self._next_id, "method": method, "params": params}
        if self.session and not method.startswith(("Target.", "Browser.")):
            request["sessionId"] = self.session
        os.write(self._to_browser, json.dumps(request).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            message = self._read_message(deadline)
            if message.get("id") == self._next_id:
                if "error" in message:
                    raise BrowserError(f"{method}: {message['error']}")
                return message.get("result", {})
            if "method" in message:
                self.events.append(message)

    def wait_event(
        self,
        method: str,
        where: Callable[[dict[str, Any]], bool] = lambda p: True,
        timeout: float = TIMEOUT,
    ) -> dict[str, Any]:
        """The first event `method` (already received or next) whose params match."""
        for n, event in enumerate(self.events):
            if event["method"] == method and where(event.get("params", {})):
                del self.events[n]
                return event["params"]
        deadline = time.monotonic() + timeout
        while True:
            message = self._read_message(deadline)
            if message.get("method") == method and where(message.get("params", {})):
                return message["params"]
            if "method" in message:
                self.events.append(message)

    def evaluate(self, expression: str) -> Any:
        result = self.call(
            "Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True
        )
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression!r} threw: {result['exceptionDetails']}")
        return result["result"].get("value")

    # -- what a user does -------------------------------------------------------------------

    def open(self, path: Path, fragment: str = "") -> float:
        """Navigate to a file and wait for its load event; the seconds it took."""
        started = time.perf_counter()
        url = path.resolve().as_uri() + (f"#{fragment}" if fragment else "")
        self.call("Page.navigate", url=url)
        self.wait_event("Page.loadEventFired")
        return time.perf_counter() - started

    def click(self, selector: str) -> None:
        """A real mouse click (press and release) at the middle of the element."""
        box = self.evaluate(
            f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
            " if (!e) return null; e.scrollIntoView({block: 'center', inline: 'center'});"
            " const r = e.getBoundingClientRect();"
            " return {x: r.left + r.width / 2, y: r.top + r.height / 2, w: r.width}; })()"
        )
        if not box or not box["w"]:
            raise BrowserError(f"nothing visible to click at {selector!r}")
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.call(
                "Input.dispatchMouseEvent",
                type=kind,
                x=box["x"],
                y=box["y"],
                button="left" if kind != "mouseMoved" else "none",
                clickCount=1 if kind != "mouseMoved" else 0,
            )

    def screenshot(self, path: Path) -> None:
        data = self.call("Page.captureScreenshot", format="png")["data"]
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))

    def log(self, method: str) -> list[dict[str, Any]]:
        return [e["params"] for e in self.events if e["method"] == method]

    # -- the end ----------------------------------------------------------------------------

    def _stderr(self) -> str:
        if self.process.poll() is None or self.process.stderr is None:
            return "(still running)"
        return self.process.stderr.read().decode(errors="replace")[-2000:]

    def close(self) -> None:
        if self.process.poll() is None:
            try:
                if self.session:
                    self.call("Browser.close", timeout=10)
            except (BrowserError, OSError):
                pass
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for fd in (self._to_browser, self._from_browser):
            with suppress(OSError):
                os.close(fd)
        if self.process.stderr is not None:
            self.process.stderr.close()
        shutil.rmtree(self.profile, ignore_errors=True)


@contextmanager
def chromium() -> Iterator[Chromium]:
    browser = Chromium()
    try:
        yield browser
    finally:
        browser.close()


def measure_load(path: Path, repeat: int = 5) -> dict[str, float]:
    """Open a rendered report `repeat` times; the median of each figure, in milliseconds:
    first contentful paint, DOMContentLoaded, the page's script ready, the load event, then
    the cost of the unexpected-only filter, of opening a cell, of the first group's filter
    and of sorting the list of unexpected cells."""
    runs: list[dict[str, float]] = []
    with chromium() as browser:
        for _ in range(repeat):
            browser.open(path)
            runs.append(
                browser.evaluate(
                    "(() => { const n = performance.getEntriesByType('navigation')[0];"
                    " const p = performance.getEntriesByName('first-contentful-paint')[0];"
                    " const r = window.killpointReport; let t = performance.now();"
                    " document.getElementById('f-unexp').click(); document.body.offsetHeight;"
                    " const f = performance.now() - t;"
                    " const b = document.querySelector('td.x button[data-c]') ||"
                    " document.querySelector('button[data-c]');"
                    " t = performance.now(); r.open(+b.dataset.c); document.body.offsetHeight;"
                    " const o = performance.now() - t; r.close();"
                    " document.getElementById('f-unexp').click();"
                    " t = performance.now(); r.group(0); document.body.offsetHeight;"
                    " const g = performance.now() - t; r.group(null); r.list(true);"
                    " t = performance.now(); r.sort('scenario'); document.body.offsetHeight;"
                    " const s = performance.now() - t; r.list(false);"
                    " return {fcp_ms: p ? p.startTime : -1, dcl_ms: n.domContentLoadedEventEnd,"
                    " ready_ms: r.ready, load_ms: n.loadEventEnd, filter_ms: f, open_ms: o,"
                    " group_ms: g, sort_ms: s}; })()"
                )
            )
    return {key: statistics.median(run[key] for run in runs) for key in runs[0]}


# -- the test --------------------------------------------------------------------------------

# Would leave a trace if it ever ran: a changed title, a global, a DOM element.
TRAP = "window.__kp_pwned=1;document.title='PWNED'"
HOSTILE = (
    f"<script>{TRAP}</script>"
    f'<img src=x onerror="{TRAP}">'
    f'<svg onload="{TRAP}"></svg>'
    f"</script><script>{TRAP}</script>"
    f'"><iframe srcdoc="<script>parent.{TRAP}</script>"></iframe>'
    "\x1b[31mRED\x1b[0m {{ 7*7 }}"
)


# Resolves with an element's text once it is not WAS (a MutationObserver, not a timer).
CHANGED = (
    "new Promise(done => { const e = document.getElementById('ID');"
    " const check = () => { if (e.textContent !== 'WAS') done(e.textContent); }; check();"
    " new MutationObserver(check).observe(e, {childList: true, characterData: true, subtree: true}); })"
)


def browser_document() -> dict[str, Any]:
    from tests.benchmarks.report_size import synthetic_document

    document = synthetic_document(300, seed=11)
    hostile = dict(document["cells"][0])
    hostile.update(
        id=f"reference/hostile-content/tool/sqlite/{HOSTILE}",
        scenario=f"hostile-content{HOSTILE}",
        mode="tool",
        schedule=["after-checkpoint:1"],
        verdict="diverged",
        expected=False,
        detail=f"detail {HOSTILE}",
        findings=differs(f"session.{HOSTILE}", HOSTILE, [HOSTILE]),
        stderr_tail=f"stderr {HOSTILE}",
        timeline=[
            [0.001, "worker started (pid 1)", "start", "worker"],
            [0.05, f"event {HOSTILE}", "fault", HOSTILE],
        ],
        store_at_crash={
            "checkpoints": 1,
            "runs": [{"run": 1, "status": HOSTILE}],
            "power_cut": {  # a power-loss cell's evidence: what each file kept at the cut
                "synced_bytes": 4096,
                "lost_bytes": 8,
                "files": {
                    HOSTILE: {
                        "path": HOSTILE,
                        "entry": "durable",
                        "live_bytes": 4104,
                        "synced_bytes": 4096,
                        "lost_bytes": 8,
                        "syncs": 2,
                        "torn_bytes": 0,
                    }
                },
                # a cut model's name and an operation it kept: run content too
                "cut": f"torn-seq {HOSTILE}",
                "ops": [
                    {
                        "seq": 1,
                        "op": "write",
                        "path": HOSTILE,
                        "offset": 0,
                        "length": 8,
                        "fate": "kept",
                        "kept": 8,
                    },
                ],
            },
        },
        replay=f"killpoint replay '{HOSTILE}'",
        sides={"expected": f"side {HOSTILE}", "actual": HOSTILE},
        diff=[{"path": f"session.{HOSTILE}", "expected": HOSTILE, "actual": None}],
    )
    hostile["findings"][0].update(evidence=[f"ledger {HOSTILE}"], tool=HOSTILE)
    document["groups"].append(
        {"key": f"run-differs:{HOSTILE}:-", "kind": "run-differs", "tool": HOSTILE,
         "path": HOSTILE, "severity": "medium", "verdict": "diverged", "count": 1,
         "cells": [hostile["id"]], "example": f"example {HOSTILE}",
         "example_cell": hostile["id"], "replay": f"killpoint replay '{HOSTILE}'"}
    )  # fmt: skip
    document["accepted"][HOSTILE] = {"reason": HOSTILE, "link": f"javascript:{TRAP}"}
    document["cells"] = [
        c
        for c in document["cells"]
        if not (c["scenario"] == "hostile-content" and c["mode"] == "tool")
    ] + [hostile]
    document["command"] = f"killpoint matrix {HOSTILE}"
    return document


@pytest.fixture(scope="module")
def browser() -> Iterator[Chromium]:
    if not Path(CHROMIUM).exists():
        reason = f"{CHROMIUM} not found (apt-get install chromium)"
        if os.environ.get("KILLPOINT_REQUIRE_CHROMIUM"):  # set by .ci/run: never skip there
            pytest.fail(reason)
        print(f"\nskipping the browser test: {reason}")
        pytest.skip(reason)
    with chromium() as b:
        yield b


def assert_no_run_content_ran(browser: Chromium) -> None:
    """Nothing from the run executed, and nothing from it became an element."""
    assert browser.evaluate("typeof window.__kp_pwned") == "undefined"
    assert browser.evaluate("document.title").startswith("killpoint crash matrix")
    # No script blocked by the Content-Security-Policy either: a blocked one would mean
    # markup from the run became a script or a handler (and only the CSP stopped it).
    refused = [e for e in browser.log("Log.entryAdded") if e["entry"].get("source") == "security"]
    assert refused == []
    assert browser.evaluate("document.querySelectorAll('img, iframe, object, embed').length") == 0
    assert browser.evaluate("document.querySelectorAll('script').length") == 2
    assert (
        browser.evaluate(
            "Array.from(document.querySelectorAll('*')).filter(e =>"
            " Array.from(e.attributes).some(a => a.name.startsWith('on'))).length"
        )
        == 0
    )
    assert browser.log("Runtime.exceptionThrown") == []  # and the page's own script is sound


def test_filter_open_a_cell_and_no_run_content_runs(browser: Chromium, tmp_path: Path) -> None:
    from killpoint.report.html import render_report

    document = browser_document()
    page = tmp_path / "report.html"
    page.write_text(render_report(document), encoding="utf-8")
    seconds = browser.open(page)
    print(f"\nreport of {len(document['cells'])} cells loaded in {seconds * 1000:.0f} ms")

    assert browser.evaluate("typeof window.killpointReport") == "object", "the page script ran"
    assert_no_run_content_ran(browser)
    total = browser.evaluate("document.querySelectorAll('#matrix tbody tr:not([hidden])').length")
    rows = len({(c["scenario"], c["mode"]) for c in document["cells"]}) + len(document["skipped"])
    assert total == rows

    # Filter to the unexpected cells with the mouse.
    browser.click("#f-unexp")
    assert browser.evaluate("document.getElementById('f-unexp').checked") is True
    shown = browser.evaluate(
        "Array.from(document.querySelectorAll('#matrix tbody tr:not([hidden])'))"
        ".map(tr => +tr.dataset.unexp)"
    )
    with_unexpected = {  # an accepted cell is counted apart, not as unexpected
        (c["scenario"], c["mode"])
        for c in document["cells"]
        if not c["expected"] and not c.get("accepted")
    }
    assert len(shown) == len(with_unexpected) < total
    assert all(n > 0 for n in shown)
    # Every visible column has an unexpected cell in a visible row.
    assert browser.evaluate(
        "(() => { const heads = Array.from(document.querySelectorAll('#matrix thead tr:nth-child(2) th'));"
        " const rows = Array.from(document.querySelectorAll('#matrix tbody tr:not([hidden])'));"
        " return heads.every((th, i) => th.hidden ||"
        " rows.some(tr => tr.cells[i + 1] && tr.cells[i + 1].classList.contains('x'))); })()"
    )

    # Open the hostile cell with the mouse and read its evidence back from the page.
    n = len(document["cells"]) - 1
    browser.click(f'button[data-c="{n}"]')
    detail = browser.evaluate(
        "(() => { const t = id => document.getElementById(id).textContent;"
        " return {hidden: document.getElementById('detail').hidden, title: t('d-title'),"
        " verdict: t('d-verdict'), expected: t('d-expected'), detail: t('d-detail'),"
        " stderr: t('d-stderr'), base: t('d-base'), actual: t('d-actual'), path: t('d-path'),"
        " replay: t('d-replay'), events: t('d-events'), store: t('d-store'), id: t('d-id'),"
        " marks: document.querySelectorAll('#d-svg .mk').length,"
        " starts: document.querySelectorAll('#d-svg .mk.k-start').length,"
        " faults: document.querySelectorAll('#d-svg .mk.k-fault').length,"
        " lanes: Array.from(document.querySelectorAll('#d-svg .lane-label'), e => e.textContent)};"
        " })()"
    )
    shown_hostile = HOSTILE.replace("\x1b", "\\x1b")  # ESC is written out, not sent
    assert detail["hidden"] is False
    assert detail["title"] == "after-checkpoint:1"
    assert detail["verdict"].endswith("diverged") and detail["expected"] == "unexpected"
    assert detail["detail"] == f"detail {shown_hostile}"
    assert detail["stderr"] == f"stderr {shown_hostile}"
    assert detail["base"] == shown_hostile
    assert detail["actual"] == json.dumps([HOSTILE], ensure_ascii=False)  # not text: as JSON
    assert detail["path"] == f"session.{shown_hostile}"
    assert detail["replay"] == f"killpoint replay '{shown_hostile}'"
    assert f"event {shown_hostile}" in detail["events"]
    assert shown_hostile in detail["store"]
    assert f"The power cut (torn-seq {shown_hostile}) left each file" in detail["store"]
    assert "4096 bytes in the image, 8 lost" in detail["store"]
    assert f"#1 write {shown_hostile} @0+8: kept" in detail["store"]  # what the model kept
    assert f"{shown_hostile}durable4096841042" in detail["store"]  # a row per file
    assert detail["marks"] == 2
    # Drawn from each event's kind and lane: a worker's start on its own lane, and a
    # fault on a lane whose (hostile) name is only ever text.
    assert (detail["starts"], detail["faults"]) == (1, 1)
    assert detail["lanes"][0] == "worker"
    assert detail["lanes"][1] == shown_hostile[:40]
    # Its findings, evidence, sides and whole diff, opened: text, and nothing runs.
    browser.evaluate("document.querySelectorAll('#detail details').forEach(d => d.open = true)")
    opened = browser.evaluate(
        "(() => { const t = s => document.querySelector(s).textContent;"
        " return {evidence: t('#d-findings pre.ev'), where: t('#d-findings .f-where'),"
        " compared: t('#d-compared'), whole: t('#d-whole-table tbody'),"
        " group: t('#groups li.group:last-child')}; })()"
    )
    assert opened["evidence"] == f"ledger {shown_hostile}"
    assert opened["where"].endswith(f"(tool {shown_hostile})")
    assert f"side {shown_hostile}" in opened["compared"]
    assert opened["whole"].startswith(f"session.{shown_hostile}{shown_hostile}")
    assert f"example {shown_hostile}" in opened["group"]
    browser.evaluate("document.getElementById('groups-details').open = true")
    browser.click("#groups li.group:last-child button.g-filter")
    assert browser.evaluate(
        "Array.from(document.querySelectorAll('#matrix td.ing button')).map(b => +b.dataset.c)"
    ) == [n]
    browser.click("#f-group-clear")
    assert_no_run_content_ran(browser)

    # The copy button puts the replay command on the clipboard.
    browser.click("#d-copy")
    assert browser.evaluate(CHANGED.replace("ID", "d-copy").replace("WAS", "Copy")) == "Copied"
    assert browser.evaluate("navigator.clipboard.readText()") == detail["replay"]
    browser.screenshot(REPORTS / "report-browser.png")

    assert_no_run_content_ran(browser)

    # The open cell is in the address (a link to it), and Escape closes the panel.
    assert browser.evaluate("decodeURIComponent(location.hash.slice(1))") == detail["id"]
    browser.call(
        "Input.dispatchKeyEvent",
        type="keyDown",
        key="Escape",
        code="Escape",
        windowsVirtualKeyCode=27,
    )
    assert browser.evaluate("document.getElementById('detail').hidden") is True
    assert browser.evaluate("location.hash") == ""

    # A link to a cell opens it.
    browser.call("Page.navigate", url="about:blank")
    browser.wait_event("Page.loadEventFired")
    wanted = document["cells"][3]["id"]
    browser.open(page, fragment=quote(wanted, safe=""))
    assert browser.evaluate("document.getElementById('detail').hidden") is False
    assert browser.evaluate("document.getElementById('d-id').textContent") == wanted
    assert_no_run_content_ran(browser)


def press(browser: Chromium, key: str) -> None:
    """A real key press (down and up) on the focused element."""
    codes = {"Escape": ("Escape", 27), "ArrowRight": ("ArrowRight", 39)}
    code, vk = codes[key] if key in codes else (f"Key{key.upper()}", ord(key.upper()))
    text = {"text": key} if len(key) == 1 else {}
    for kind in ("keyDown", "keyUp"):
        browser.call(
            "Input.dispatchKeyEvent",
            type=kind,
            key=key,
            code=code,
            windowsVirtualKeyCode=vk,
            **(text if kind == "keyDown" else {}),
        )


VISIBLE_CELLS = (
    "Array.from(document.querySelectorAll('#matrix tbody tr:not([hidden]) td:not([hidden])"
    " button[data-c]')).filter(b => getComputedStyle(b).opacity === '1').map(b => +b.dataset.c)"
)


def test_groups_panel_keys_and_list(browser: Chromium, tmp_path: Path) -> None:
    """A user reads the groups, filters by one, opens cells beside the matrix, steps with
    j/k, closes with Esc, and sorts the list of unexpected cells."""
    from killpoint.report.html import render_report
    from tests.benchmarks.report_size import synthetic_document

    document = synthetic_document(300, seed=11)
    page = tmp_path / "report.html"
    page.write_text(render_report(document), encoding="utf-8")
    browser.open(page)
    assert_no_run_content_ran(browser)
    index = {c["id"]: n for n, c in enumerate(document["cells"])}
    groups = document["groups"]
    assert len(groups) >= 3
    assert browser.evaluate("document.querySelectorAll('#groups li.group').length") == len(groups)
    everything = set(browser.evaluate(VISIBLE_CELLS))
    assert len(everything) == len(document["cells"])

    # Clicking a group leaves only its cells lit in the matrix; clearing brings all back.
    g = max(range(len(groups)), key=lambda n: groups[n]["count"] if groups[n]["count"] < 40 else 0)
    browser.evaluate("document.getElementById('groups-details').open = true")
    browser.click(f'#groups button.g-filter[data-g="{g}"]')
    lit = set(browser.evaluate(VISIBLE_CELLS))
    assert lit == {index[c] for c in groups[g]["cells"]}
    assert browser.evaluate(
        "Array.from(document.querySelectorAll('#matrix tbody tr:not([hidden])'))"
        ".every(tr => tr.querySelector('td.ing'))"
    )
    assert browser.evaluate("document.getElementById('f-group-on').hidden") is False
    assert browser.evaluate("document.getElementById('f-group').textContent") == groups[g]["key"]
    browser.click("#f-group-clear")
    assert set(browser.evaluate(VISIBLE_CELLS)) == everything
    assert browser.evaluate("document.querySelectorAll('#matrix td.ing').length") == 0

    # A group's replay command goes to the clipboard.
    browser.click(f'li.group[data-g="{g}"] button.copy')
    assert browser.evaluate("navigator.clipboard.readText()") == groups[g]["replay"]

    # The panel opens beside the matrix: the clicked cell stays in sight and clickable.
    browser.click("#f-unexp")
    order = browser.evaluate(
        "Array.from(document.querySelectorAll('#matrix tbody tr:not([hidden]) td.x:not([hidden])"
        " button[data-c]')).map(b => +b.dataset.c)"
    )
    assert len(order) >= 3
    browser.click(f'#matrix button[data-c="{order[0]}"]')
    layout = browser.evaluate(
        "(() => { const m = document.getElementById('matrix-wrap').getBoundingClientRect();"
        " const d = document.getElementById('detail').getBoundingClientRect();"
        " const b = document.querySelector('#matrix button.sel').getBoundingClientRect();"
        " const hit = document.elementFromPoint(b.left + b.width / 2, b.top + b.height / 2);"
        " return {matrix_right: m.right, matrix_width: m.width, detail_left: d.left,"
        " detail_width: d.width, hit: hit && hit.closest('button') ?"
        " +hit.closest('button').dataset.c : null}; })()"
    )
    assert layout["detail_width"] > 300 and layout["matrix_width"] > 300
    assert layout["matrix_right"] <= layout["detail_left"] + 1, layout
    assert layout["hit"] == order[0]

    # j and k step through the cells the filters leave, in the matrix's order.
    def open_cell() -> int:
        shown = browser.evaluate("document.getElementById('d-id').textContent")
        return index[shown]

    assert open_cell() == order[0]
    press(browser, "j")
    assert open_cell() == order[1]
    press(browser, "j")
    assert open_cell() == order[2]
    press(browser, "k")
    assert open_cell() == order[1]
    # Esc closes the panel and gives the focus back to the cell.
    press(browser, "Escape")
    assert browser.evaluate("document.getElementById('detail').hidden") is True
    assert browser.evaluate("+document.activeElement.dataset.c") == order[1]
    # With the panel closed, j moves the focus; Enter on it opens it.
    press(browser, "j")
    assert browser.evaluate("+document.activeElement.dataset.c") == order[2]
    browser.click("#f-unexp")

    # The panel: every finding, the evidence collapsed, the ledger, the whole diff collapsed.
    dup = next(
        n for n, c in enumerate(document["cells"])
        if any(f["kind"] == "effect-duplicated" for f in c["findings"])
    )  # fmt: skip
    browser.evaluate(f"window.killpointReport.open({dup})")
    panel = browser.evaluate(
        "(() => { const q = s => Array.from(document.querySelectorAll(s));"
        " return {kinds: q('#d-findings li.finding .f-kind').map(e => e.textContent),"
        " open: q('#d-findings details').map(d => d.open),"
        " ledger: document.getElementById('d-ledger-box').hidden ? null :"
        " q('#d-ledger pre').map(e => e.textContent),"
        " compared: document.getElementById('d-compared').textContent,"
        " says: document.getElementById('d-schedule').textContent}; })()"
    )
    cell = document["cells"][dup]
    assert panel["kinds"] == [f["kind"] for f in cell["findings"]]
    assert panel["open"] and not any(panel["open"])
    assert panel["ledger"] == ["\n".join(f["evidence"]) for f in cell["findings"] if f["evidence"]]
    assert "baseline" in panel["compared"] and "resumed" in panel["compared"]
    point = cell["schedule"][0].split(":")
    assert f"checkpoint {point[1]}" in panel["says"] or f"turn {point[1]}" in panel["says"]
    diverged = next(n for n, c in enumerate(document["cells"]) if c["diff"])
    browser.evaluate(f"window.killpointReport.open({diverged})")
    whole = browser.evaluate(
        "(() => { const d = document.getElementById('d-whole');"
        " return {hidden: d.hidden, open: d.open,"
        " rows: d.querySelectorAll('tbody tr').length}; })()"
    )
    assert whole == {
        "hidden": False,
        "open": False,
        "rows": len(document["cells"][diverged]["diff"]),
    }
    browser.click("#d-whole-title")
    assert browser.evaluate("document.getElementById('d-whole').open") is True
    browser.click("#d-close")

    # The list of unexpected cells: sorted by severity, then by scenario, both ways.
    browser.click("#v-list")
    assert browser.evaluate("document.getElementById('matrix-wrap').hidden") is True
    rows = "Array.from(document.querySelectorAll('#list tbody tr')).map(tr => tr.dataset.KEY)"
    unexpected = [c for c in document["cells"] if not c["expected"]]
    ranks = [int(r) for r in browser.evaluate(rows.replace("KEY", "rank"))]
    assert len(ranks) == len(unexpected)
    failing = [r for r, c in zip(ranks, browser.evaluate(
        "Array.from(document.querySelectorAll('#list tbody tr')).map(tr => tr.className)"), strict=True) if c == "x"]  # fmt: skip
    assert failing == sorted(failing)
    browser.click('#list button.sort[data-sort="scenario"]')
    scenarios = browser.evaluate(rows.replace("KEY", "scenario"))
    assert scenarios == sorted(scenarios, key=str.lower) and len(set(scenarios)) > 1
    browser.click('#list button.sort[data-sort="scenario"]')
    assert browser.evaluate(rows.replace("KEY", "scenario")) == sorted(
        scenarios, key=str.lower, reverse=True
    )
    assert browser.evaluate("document.querySelector('#list th[aria-sort]').textContent").startswith(
        "scenario"
    )
    browser.click('#list button.sort[data-sort="kind"]')
    found = browser.evaluate(rows.replace("KEY", "kind"))
    assert found == sorted(found, key=str.lower)
    browser.click('#list button.sort[data-sort="rank"]')
    assert [int(r) for r in browser.evaluate(rows.replace("KEY", "rank"))] == sorted(ranks)
    # A row opens its cell; Esc gives the focus back to that row's button.
    second = browser.evaluate("+document.querySelectorAll('#list tbody tr')[1].dataset.n")
    browser.click(f'#list button[data-c="{second}"]')
    assert open_cell() == second
    press(browser, "j")
    third = browser.evaluate("+document.querySelectorAll('#list tbody tr')[2].dataset.n")
    assert open_cell() == third
    press(browser, "Escape")
    assert (
        browser.evaluate(
            "document.activeElement.closest('#list') !== null && +document.activeElement.dataset.c"
        )
        == third
    )
    browser.screenshot(REPORTS / "report-browser-list.png")
    browser.click("#v-matrix")
    assert_no_run_content_ran(browser)


def test_a_group_filter_counts_its_own_cells_and_the_list_names_its_kind(
    browser: Chromium, tmp_path: Path
) -> None:
    """Filtering by a group says that group's count of cells (not the page's unexpected
    ones), lights exactly those, and the list's finding column names the group's kind on
    every row, even where another kind decides the cell."""
    from killpoint.report.html import render_report
    from killpoint.values.findings import deciding_data
    from tests.benchmarks.report_size import synthetic_document

    document = synthetic_document(300, seed=11)
    page = tmp_path / "report.html"
    page.write_text(render_report(document), encoding="utf-8")
    browser.open(page)
    by_id = {c["id"]: c for c in document["cells"]}
    index = {c["id"]: n for n, c in enumerate(document["cells"])}
    # A group whose cells another kind decides: the case where the column once lied.
    g, group = next(
        (n, g)
        for n, g in enumerate(document["groups"])
        if any(
            (deciding_data(by_id[c]["findings"]) or {}).get("kind") != g["kind"] for c in g["cells"]
        )
    )
    unexpected = document["summary"]["unexpected"]
    assert group["count"] != unexpected  # else the count could not tell which it counted
    browser.evaluate("document.getElementById('groups-details').open = true")
    browser.click(f'#groups button.g-filter[data-g="{g}"]')
    count = browser.evaluate("document.getElementById('f-count').textContent")
    noun = "cell" if group["count"] == 1 else "cells"
    assert f", {group['count']} {noun} of the group" in count, count
    assert set(browser.evaluate(VISIBLE_CELLS)) == {index[c] for c in group["cells"]}

    browser.click("#v-list")
    listed = browser.evaluate(
        "Array.from(document.querySelectorAll('#list tbody tr:not([hidden])'))"
        ".map(tr => [+tr.dataset.n, tr.cells[3].textContent])"
    )
    assert sorted(n for n, _ in listed) == sorted(index[c] for c in group["cells"])
    for n, kinds in listed:
        assert group["kind"] in kinds.split(", "), (n, kinds)
    assert any(not kinds.startswith(group["kind"]) for _, kinds in listed)  # decided by another
    browser.click("#v-matrix")
    browser.click("#f-group-clear")
    assert ", 1 cell of the group" not in browser.evaluate(
        "document.getElementById('f-count').textContent"
    )
    assert_no_run_content_ran(browser)


def test_cells_not_run_are_drawn_and_their_columns_kept(browser: Chromium, tmp_path: Path) -> None:
    """An interrupted report with its plan: the planned cells without a result are hatched
    "not run", a column only they fill is shown until a filter asks for unexpected cells,
    and a row stopped before its cells were planned is a row of its own."""
    from killpoint.report.html import render_report
    from tests.benchmarks.report_size import synthetic_document

    document = synthetic_document(300, seed=11)
    ran, dropped = document["cells"][:-40], document["cells"][-40:]
    plan: dict[tuple[str, ...], list[str]] = {}
    for c in document["cells"]:
        key = (c["runtime"], c["scenario"], c["mode"], c["store"])
        plan.setdefault(key, []).append("+".join(c["schedule"]))
    first = next(iter(plan))
    plan[first].append("after-checkpoint:99")  # a column no cell of the campaign reached
    document.update(
        cells=ran,
        interrupted=True,
        planned_cells=[
            *({"runtime": k[0], "scenario": k[1], "mode": k[2], "store": k[3], "schedules": v}
              for k, v in plan.items()),
            {"runtime": "reference", "scenario": "stopped-early", "mode": "tool",
             "store": "sqlite", "schedules": None},
        ],
    )  # fmt: skip
    document["summary"]["planned"] = 301
    page = tmp_path / "report.html"
    page.write_text(render_report(document), encoding="utf-8")
    browser.open(page)
    assert_no_run_content_ran(browser)
    state = (
        "(() => { const heads = Array.from(document.querySelectorAll("
        "'#matrix thead tr:nth-child(2) th'));"
        " const late = heads.find(th => th.title === 'after-checkpoint:99');"
        " const stopped = document.querySelector('#matrix tr[data-scenario=\"stopped-early\"]');"
        " return {nr: document.querySelectorAll('#matrix tbody tr:not([hidden]) td.nr:not(.skip)"
        ":not([hidden])').length, late: late ? !late.hidden : null,"
        " stopped: stopped && !stopped.hidden ? stopped.cells[1].textContent : null}; })()"
    )
    shown = browser.evaluate(state)
    assert shown["nr"] == len(dropped) + 1, shown
    assert shown["late"] is True
    assert shown["stopped"].startswith("not run: the campaign stopped before")
    assert "41 planned cells did not run, and 1 row" in " ".join(
        browser.evaluate("document.getElementById('interrupted').textContent").split()
    )
    browser.click("#f-unexp")  # no unexpected cell in them: the column and the row go
    shown = browser.evaluate(state)
    assert (shown["late"], shown["stopped"]) == (False, None), shown
    browser.click("#f-unexp")
    assert browser.evaluate(state)["late"] is True
    assert_no_run_content_ran(browser)


def test_a_report_without_cells_or_groups_has_a_sound_script(
    browser: Chromium, tmp_path: Path
) -> None:
    from killpoint.report.html import render_report

    page = tmp_path / "empty.html"
    page.write_text(render_report({"schema": "killpoint.matrix/2", "cells": []}), "utf-8")
    browser.events.clear()
    browser.open(page)
    assert browser.evaluate("window.killpointReport.cells") == 0
    for key in ("j", "k", "Escape"):
        press(browser, key)
    browser.click("#v-list")
    assert browser.evaluate("document.getElementById('list-empty').hidden") is False
    assert browser.evaluate("document.getElementById('list-empty').textContent") == (
        "No unexpected cell."
    )
    assert browser.log("Runtime.exceptionThrown") == []


# -- the screenshot tool -------------------------------------------------------------------


# The kinds an agno cancel cell shows together (issue 56's campaign), and what it says.
CANCEL_KINDS = (
    "acknowledged-lost", "cancel-ignored", "effect-duplicated", "messages-differ",
    "run-differs", "stale-write", "status-differs", "tool-executions-lost", "usage-differs",
)  # fmt: skip


def many_kinds_document() -> dict[str, Any]:
    """A campaign whose unexpected cells each show nine finding kinds and a long sentence,
    at depth-2 schedules: what made one column of the list 1,011 px wide at 1440 px."""
    from tests.benchmarks.report_size import synthetic_document

    document = synthetic_document(120, seed=5)
    for c in document["cells"][:40]:
        c.update(verdict="corrupt", expected=False, accepted=False)
        c["schedule"] = [c["schedule"][0], "after-checkpoint:3"]
        c["id"] = "/".join(
            (c["runtime"], c["scenario"], c["mode"], c["store"], "+".join(c["schedule"]))
        )
        c["detail"] = "the stale worker wrote after the takeover, at runs[0].tool_executions: " * 3
        c["findings"] = [
            {"kind": k, "severity": "high", "verdict": "corrupt", "expected": False,
             "sentence": c["detail"], "path": f"runs[0].{k}", "group": f"{k}:-:runs[*]"}
            for k in CANCEL_KINDS
        ]  # fmt: skip
    return document


@pytest.mark.parametrize("width", [1280, 1440, 1920])
def test_the_list_view_lays_out_at_common_widths(
    browser: Chromium, tmp_path: Path, width: int
) -> None:
    """Issue 56: at 1440 px the list view had one column 1,011 px wide, another 42 px, and a
    row 859 px tall. Each column keeps a readable share, the table fits the window, and
    no row grows taller than a few lines."""
    from killpoint.report.html import render_report

    page = tmp_path / "report.html"
    page.write_text(render_report(many_kinds_document()), encoding="utf-8")
    browser.call(
        "Emulation.setDeviceMetricsOverride",
        width=width,
        height=900,
        deviceScaleFactor=1,
        mobile=False,
    )
    try:
        browser.open(page)
        browser.click("#v-list")
        box = browser.evaluate(
            "(() => { const t = document.getElementById('list');"
            " return {table: t.getBoundingClientRect().width, window: window.innerWidth,"
            " columns: Array.from(t.tHead.rows[0].cells).map(c => c.getBoundingClientRect().width),"
            " rows: Array.from(t.tBodies[0].rows).map(r => r.getBoundingClientRect().height)}; })()"
        )
    finally:
        browser.call("Emulation.clearDeviceMetricsOverride")
    assert box["table"] <= box["window"], box
    assert min(box["columns"]) >= 60, box["columns"]
    assert max(box["columns"]) <= 0.4 * box["table"], box["columns"]
    assert max(box["rows"]) <= 220, max(box["rows"])


def test_the_page_formats_time_as_every_other_output_does(
    browser: Chromium, tmp_path: Path
) -> None:
    """One time format everywhere: the page's script reads a length of time as
    killpoint.values.durations does."""
    from killpoint.report.html import render_report
    from killpoint.values.durations import duration

    page = tmp_path / "report.html"
    page.write_text(render_report(browser_document()), encoding="utf-8")
    browser.open(page)
    values = [0, 0.0004, 0.0341, 0.0543, 0.9996, 1.149, 12.05, 59.96, 743.826, 7384]
    shown = browser.evaluate(f"{values}.map(t => window.killpointReport.duration(t))")
    assert shown == [duration(t) for t in values]


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="screenshot a rendered killpoint report")
    parser.add_argument("report", type=Path)
    parser.add_argument("png", type=Path)
    parser.add_argument("--cell", type=int, help="open this cell (index in the JSON) first")
    parser.add_argument("--unexpected", action="store_true", help="filter to unexpected cells")
    args = parser.parse_args(argv)
    with chromium() as browser:
        browser.open(args.report)
        if args.unexpected:
            browser.click("#f-unexp")
        if args.cell is not None:
            browser.click(f'button[data-c="{args.cell}"]')
        browser.screenshot(args.png)
    print(args.png)
    return 0


if __name__ == "__main__":
    sys.exit(main())


def differs(path: Any, baseline: Any, actual: Any) -> list[dict[str, Any]]:
    """The findings of a cell whose one difference is at `path`."""
    return [
        {"kind": "run-differs", "severity": "medium", "verdict": "diverged", "expected": False,
         "sentence": f"{path} differs", "path": path, "tool": None, "expected_value": baseline,
         "actual_value": actual, "evidence": [], "group": "run-differs:-:-"}
    ]  # fmt: skip
