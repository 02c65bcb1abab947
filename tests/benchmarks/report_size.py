"""Report size and load time: does a 2,000-cell crash matrix stay small and open without a stall?

    python -m tests.benchmarks.report_size [--cells 2000] [--out reports/benchmark.html]
                                           [--repeat 5] [--no-browser]

Builds a synthetic campaign document shaped like `killpoint matrix` output (the built-in
scenarios x three modes x every kind of crash point, then depth-2 schedules until the count
is reached), pessimistic where size is concerned: 40% of the cells carry a stderr tail of
about 1.7 KB that differs from every other one, every cell has a timeline of 10-13 events,
diverged cells carry first differences of 600 characters and a whole-session difference of
a dozen leaves, duplicated cells their ledger lines; the findings are grouped
(killpoint.judge.groups) and one group is accepted, as `killpoint matrix --accept` writes it. Renders it with
`killpoint.report.html.render_report`, prints the render time and the HTML size (target: under 5 MB) and, when
/usr/bin/chromium exists, how long headless Chromium takes to show the file from disk: the
median over a few loads of first paint, DOMContentLoaded, the page's script ready and the
load event, then the cost of a filter, a group filter, sorting the list of unexpected cells
and opening a cell. Prints figures; exits non-zero
only when the size target is missed.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from killpoint import scenarios

SIZE_LIMIT = 5 * 1024 * 1024
SCENARIOS = tuple(scenarios.BUILTINS)
MODES = ("runs", "tool-batch", "tool")
CHECKPOINTS = {"runs": 1, "tool-batch": 5, "tool": 9}
SKIPPED = ("confirm", "tool")  # a row the campaign skipped (with its reason)

TRACEBACK = """Traceback (most recent call last):
  File "/work/main/scenarios/drive.py", line 69, in drive
    result = await driver.start(
             ^^^^^^^^^^^^^^^^^^^
  File "/work/main/harness/adapters/reference.py", line 67, in start
    return _result(await self.agent.arun(input, session_id=session_id, run_id=run_id))
                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/work/main/runtime/agent.py", line 117, in arun
    return await self._drive(st)
           ^^^^^^^^^^^^^^^^^^^^^
  File "/work/main/runtime/agent.py", line 202, in _drive
    return await self._loop(st)
           ^^^^^^^^^^^^^^^^^^^^
  File "/work/main/runtime/agent.py", line 237, in _loop
    self._fence(st)
  File "/work/main/runtime/agent.py", line 248, in _fence
    raise RunOwnedElsewhere(
runtime.errors.RunOwnedElsewhere: runtime: run 'killpoint-session-run1' was taken over by
another worker (pid {pid}, work dir /tmp/killpoint-{token}/{cell}); this worker stopped
before running its next tool batch"""


def schedules(mode: str, width: int) -> list[list[str]]:
    """Every depth-1 point of a row, in the engine's kinds; then pairs of boundaries."""
    c = CHECKPOINTS[mode]
    turns = max(c // 2, 2)
    points: list[list[str]] = []
    points += [[f"after-checkpoint:{k}"] for k in range(1, c + 1)]
    points += [[f"mid-batch:{k}:{i}"] for k in range(1, turns) for i in range(width)]
    points += [[f"mid-model:{k}"] for k in range(1, turns + 1)]
    points += [[f"mid-commit:{k}"] for k in range(1, c + 1)]
    points += [[f"sigstop:{k}"] for k in range(1, c + 1)]
    points += [[f"double-resume:{k}"] for k in range(1, c + 1)]
    points += [[f"model-500:{k}"] for k in range(1, turns + 1)]
    points += [[f"model-timeout:{k}"] for k in range(1, turns + 1)]
    points += [
        [f"after-checkpoint:{a}", f"after-checkpoint:{b}"]
        for a in range(1, c + 1)
        for b in range(1, c + 1)
    ]
    points += [[f"after-checkpoint:{a}", f"mid-model:{b}"] for a in range(1, c + 1) for b in (1, 2)]
    return points


TRACED = ("after-checkpoint", "mid-batch", "mid-model", "mid-commit")  # the fast path's kinds


def _gate(rng: random.Random, point: str) -> str:
    kind, _, rest = point.partition(":")
    k = rest.split(":")[0]
    if kind == "mid-model":
        return f"gate model:{k}:received"
    if kind == "mid-batch":
        return f"gate tool:fetch_page:{rng.getrandbits(48):012x}:finished"
    if kind == "mid-commit":
        return f"gate checkpoint:{k}:committing"
    return f"gate checkpoint:{k}:landed"


def _timeline(
    rng: random.Random, schedule: list[str], killed: bool, earlier: Sequence[str], tracer: int
) -> list[list[Any]]:
    """A cell's events as the engine records them: a row's traced worker's history up to the
    cell's point (the fast path: the gates it passed and its stops for the copies of the
    points before it), then the cell's own resume, a kill cell's; a worker of its own
    for every other kind. Worker pids differ in every cell, the tracer's in every row."""
    t = rng.uniform(0.0001, 0.001)
    events: list[list[Any]] = []
    point = schedule[0]

    def add(text: str, kind: str, lane: str, step: float = 0.01) -> None:
        nonlocal t
        t += rng.uniform(step / 3, step)
        events.append([round(t, 4), text, kind, lane])

    add(
        f"plan: {'+'.join(schedule)} — checkpoint 1 has landed, 2 has not; the worker is killed",
        "other",
        "harness",
    )
    pid = rng.randrange(1000, 60000)
    traced = killed and point.split(":")[0] in TRACED
    if traced:
        add(f"tracer started (pid {tracer})", "start", "tracer")
        for before in [*earlier, point]:
            held = rng.randrange(0, 5)
            add(_gate(rng, before), "store", "store", 0.03)
            add(
                f"store confirms {held} checkpoint{'s' if held != 1 else ''} at {before}",
                "store",
                "store",
            )
            add("tracer paused (SIGSTOP)", "pause", "tracer", 0.002)
            add("tracer woken (SIGCONT)", "wake", "tracer", 0.02)
            add(f"state at {before} copied (worker stopped)", "other", "harness", 0.001)
        add(
            f"the state at {point} copied from the row's traced worker (pid {tracer}) while it "
            "was stopped (SIGSTOP): no worker of this cell's own is killed",
            "kill",
            "faults",
            0.001,
        )
    else:
        add(f"worker started (pid {pid})", "start", "worker")
        for k in range(1, rng.randrange(2, 5)):
            add(f"gate checkpoint:{k}:landed", "store", "store", 0.05)
        add(f"store confirms {k} checkpoints at {point}", "store", "store")
        if killed:
            add(f"worker killed (pid {pid}, exit -9)", "kill", "worker")
        else:
            add("worker paused (SIGSTOP)", "pause", "worker")
            add(f"{rng.randrange(0, 3)} calls in flight at the pause", "other", "harness")
            add(f"resumer started (pid {pid + 41})", "start", "resumer", 0.3)
            add("acknowledged killpoint-session-run1 COMPLETED", "store", "store", 0.3)
            add("resumer done", "end", "resumer")
            add("worker woken (SIGCONT)", "wake", "worker")
            add("worker raised RunOwnedElsewhere", "fault", "worker")
            add(
                "stale worker ended: error RunOwnedElsewhere: runtime: run "
                "'killpoint-session-run1' was taken over by another worker; this worker's "
                f"checkpoint {k} was rejected (stale writer)",
                "fault",
                "faults",
            )
    if killed:
        add(
            f"{rng.randrange(0, 3)} calls with their effect done and no durable result",
            "other",
            "harness",
        )
        add("inspect: store sound", "store", "store")
        add(f"resumer started (pid {pid + 7})", "start", "resumer")
        for _ in range(rng.randrange(0, 3)):
            add(f"gate tool:fetch_page:{rng.getrandbits(48):012x}:started", "tool", "tools")
        add("acknowledged killpoint-session-run1 COMPLETED", "store", "store", 0.2)
        add("resumer done", "end", "resumer")
    add(
        "the session of the resumed run matches that of the baseline, field by field",
        "other",
        "harness",
    )
    add("verdict: ok, expected", "other", "harness")
    return events


def summary_of(cells: list[dict[str, Any]], seconds: float) -> dict[str, Any]:
    """A document's `summary`, counted from its cells' JSON."""
    by: dict[str, int] = {}
    for c in cells:
        by[c["verdict"]] = by.get(c["verdict"], 0) + 1
    return {
        "cells": len(cells),
        "planned": len(cells),
        "unexpected": sum(1 for c in cells if not c["expected"]),
        "expected_losses": sum(1 for c in cells if c["verdict"] == "lost" and c["expected"]),
        "duplicates": sum(c["duplicates"] for c in cells),
        "by_verdict": by,
        "missed": by.get("missed", 0),
        "seconds": round(seconds, 3),
        "cells_per_second": round(len(cells) / seconds, 2) if seconds else 0.0,
    }


ACCEPTED = "hung:-:-"  # accepted in the synthetic campaign, with a reason and a link
FIXED = "effect-lost:send_email:ledger"  # accepted, and no longer met: listed as fixed


def _grouped(out: list[dict[str, Any]]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """The document's groups and accepted entries, as the campaign computes them."""
    from killpoint.judge.groups import Accepted, apply_accepted, group_findings
    from killpoint.values.cell import CellResult

    accepted = {
        ACCEPTED: Accepted(ACCEPTED, "the resumer waits out a lease", "https://example.org/1"),
        FIXED: Accepted(FIXED, "fixed upstream", ""),
    }
    results = [CellResult.from_json(dict(c)) for c in out]
    apply_accepted(results, accepted)
    for c, r in zip(out, results, strict=True):
        c["accepted"] = r.accepted
    groups = [g.to_json() for g in group_findings(results)]
    return groups, {k: {"reason": a.reason, "link": a.link} for k, a in accepted.items()}


# The whole default matrix's count of cells (issue 56 measured its report at 6.07 MB).
DEFAULT_MATRIX = 2211


def synthetic_document(cells: int = 2000, seed: int = 7) -> dict[str, Any]:
    """A campaign document with `cells` cells, shaped like `killpoint.report.document.to_document`."""
    rng = random.Random(seed)
    rows = [(s, m) for s in SCENARIOS for m in MODES if (s, m) != SKIPPED]
    per_row = {row: schedules(row[1], 3 if row[0] != "parallel-fetch" else 5) for row in rows}
    out: list[dict[str, Any]] = []
    depth = 0
    while len(out) < cells:
        for scenario, mode in rows:
            todo = per_row[(scenario, mode)]
            if depth < len(todo) and len(out) < cells:
                earlier = [
                    p[0] for p in todo[:depth] if len(p) == 1 and p[0].split(":")[0] in TRACED
                ]
                tracer = 9000 + rows.index((scenario, mode))
                out.append(_cell(rng, scenario, mode, todo[depth], earlier, tracer))
        depth += 1
        if depth > max(len(v) for v in per_row.values()):
            break
    seconds = sum(c["seconds"] for c in out) / 8
    groups, accepted = _grouped(out)
    summary = summary_of(out, seconds)
    summary["accepted"] = sum(1 for c in out if c["accepted"])
    summary["unexpected"] -= summary["accepted"]
    return {
        "schema": "killpoint.matrix/2",
        "command": f"killpoint matrix --depth 2 --workers 8 --seed {seed}",
        "seed": seed,
        "runtime": "reference",
        "store": "sqlite",
        "modes": list(MODES),
        "points": "all",
        "depth": 2,
        "versions": {"python": "3.11.7", "killpoint": "0.1.0", "openai": "3.57.0"},
        "interrupted": False,
        "summary": summary,
        "excluded_from_comparison": ["run_id", "session_id", "created_at", "updated_at"],
        "groups": groups,
        "accepted": accepted,
        "skipped": [
            {
                "runtime": "reference",
                "scenario": SKIPPED[0],
                "mode": SKIPPED[1],
                "reason": "example: the adapter does not support this mode",
            }
        ],
        "baselines": [
            {
                "runtime": "reference",
                "scenario": s,
                "mode": m,
                "store": "sqlite",
                "checkpoints": CHECKPOINTS[m],
                "seconds": 0.5,
                "problem": None,
                "nondeterministic": None,
            }
            for s, m in rows
        ],
        "cells": out,
    }


def _cell(
    rng: random.Random,
    scenario: str,
    mode: str,
    schedule: list[str],
    earlier: Sequence[str] = (),
    tracer: int = 9000,
) -> dict[str, Any]:
    kind = schedule[0].split(":")[0]
    killed = kind in ("after-checkpoint", "mid-batch", "mid-model", "mid-commit", "double-resume")
    roll = rng.random()
    verdict, expected, duplicates, detail, diff = "ok", True, 0, "", None
    findings: list[dict[str, Any]] = []
    whole: list[dict[str, Any]] = []
    if mode == "runs" and killed:
        verdict, detail = "lost", "run 1 is not in the store after the crash"
        findings.append(_finding("run-lost", detail, "runs[0]", expected=True))
    elif roll < 0.04:
        verdict, expected = "diverged", False
        diff = {
            "path": "session.runs[0].messages[7].content",
            "baseline": "".join(rng.choice("abcdefgh ") for _ in range(600)),
            "actual": "".join(rng.choice("abcdefgh ") for _ in range(600)),
        }
        detail = f"{diff['path']}: baseline differs from resumed"
        findings.append(
            _finding(
                "messages-differ",
                detail,
                "runs[0].messages[7].content",
                expected_value=diff["baseline"],
                actual_value=diff["actual"],
            )
        )
        findings.append(_finding("usage-differs", "runs[0].metrics.total_tokens differs", "runs[0].metrics.total_tokens", expected_value=812, actual_value=1624))  # fmt: skip
        whole = [
            {"path": f"session.runs[0].messages[{n}].content", "expected": "a" * 80, "actual": "b" * 80}
            for n in range(7, 19)
        ]  # fmt: skip
    elif roll < 0.10:
        verdict, expected, duplicates = "duplicated", False, rng.randrange(1, 5)
        detail = f"fetch_page({{}}) ran {duplicates} more time(s) than in the baseline"
        lines = [
            f"fetch_page started by pid {rng.randrange(1000, 60000)} at +{0.1 * n:.3f} s"
            for n in range(duplicates + 1)
        ]
        findings.append(_finding("effect-duplicated", detail, "ledger", tool="fetch_page", evidence=lines, expected_value=0, actual_value=duplicates))  # fmt: skip
    elif roll < 0.11:
        verdict, expected = "unresumable", False
        detail = "continue_run raised RunOwnedElsewhere"
        findings.append(_finding("unresumable", detail, "run"))
    elif roll < 0.115:
        verdict, expected = "missed", False
        detail = "the worker never reached the crash point"
        findings.append(_finding("missed", detail, ""))
    elif roll < 0.12:
        verdict, expected = "hung", False
        detail = "the resumer passed its time limit (30 s)"
        findings.append(_finding("hung", detail, ""))
    elif mode != "runs" and roll < 0.3:
        duplicates = 1
        findings.append(_finding("effect-repeated", "fetch_page({}) ran again 1 time(s): it was in flight at a crash", "ledger", tool="fetch_page", evidence=["fetch_page started by pid 10 at +0.100 s", "fetch_page started by pid 11 at +0.300 s"], expected=True))  # fmt: skip
    cell_id = "/".join(("reference", scenario, mode, "sqlite", "+".join(schedule)))
    stderr = ""
    if rng.random() < 0.4:
        stderr = "\n--- worker stderr ---\n" + TRACEBACK.format(
            pid=rng.randrange(1000, 60000), token=f"{rng.getrandbits(64):016x}", cell=cell_id
        )
    return {
        "id": cell_id,
        "runtime": "reference",
        "scenario": scenario,
        "mode": mode,
        "store": "sqlite",
        "schedule": schedule,
        "verdict": verdict,
        "expected": expected,
        "duplicates": duplicates,
        "bound": 0 if mode == "runs" else 1,
        "seconds": round(rng.uniform(0.06, 0.6), 4),
        "detail": detail,
        "findings": findings,
        "sides": {
            "expected": "store after the takeover",
            "actual": "store after the stale worker woke",
        }
        if kind.startswith("sigstop")
        else {"expected": "baseline", "actual": "resumed"},
        "diff": whole,
        "accepted": False,
        "store_at_crash": {
            "checkpoints": 2,
            "runs": [
                {
                    "run": 1,
                    "status": "RUNNING",
                    "messages": 7,
                    "last_checkpoint_at_message_index": 7,
                    "tool_executions": 5,
                }
            ],
        }
        if killed
        else None,
        "stderr_tail": stderr,
        "timeline": _timeline(rng, schedule, killed, earlier[-12:], tracer),
        "exit_codes": [-9, 0] if killed else [0, 0],
        "replay": f"killpoint replay {cell_id}",
        "kept": None,
    }


def _finding(kind: str, sentence: str, path: str, **fields: Any) -> dict[str, Any]:
    from killpoint.values.findings import Finding

    evidence = tuple(fields.pop("evidence", ()))
    return Finding(kind, sentence, path=path, evidence=evidence, **fields).to_json()


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--cells", type=int, default=2000)
    parser.add_argument("--out", default="reports/benchmark.html")
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument("--repeat", type=int, default=5, help="browser loads (median)")
    args = parser.parse_args(argv)

    from killpoint.report.html import render_report

    document = synthetic_document(args.cells)
    started = time.perf_counter()
    html = render_report(document)
    render_seconds = time.perf_counter() - started
    size = len(html.encode("utf-8"))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(html, encoding="utf-8")
    cells = len(document["cells"])
    verdict = "OK" if size < SIZE_LIMIT else "OVER"
    print(f"cells:        {cells}")
    print(f"html size:    {size / 1024 / 1024:.2f} MB ({size} bytes; limit 5 MB: {verdict})")
    print(f"bytes/cell:   {size / cells:.0f}")
    print(f"render:       {render_seconds:.2f} s")
    print(f"written:      {out}")
    if not args.no_browser:
        from tests.harness.report.test_browser import CHROMIUM, measure_load

        if not Path(CHROMIUM).exists():
            print(f"browser:      skipped ({CHROMIUM} not found; apt-get install chromium)")
        else:
            timing = measure_load(out, repeat=args.repeat)
            print(f"browser:      headless Chromium, median of {args.repeat} loads from disk")
            print(f"first paint:  {timing['fcp_ms']:.0f} ms (first contentful paint)")
            print(f"dom content:  {timing['dcl_ms']:.0f} ms (DOMContentLoaded)")
            print(f"script ready: {timing['ready_ms']:.0f} ms (filters and cells work)")
            print(f"load event:   {timing['load_ms']:.0f} ms")
            print(f"filter:       {timing['filter_ms']:.1f} ms (unexpected only, with layout)")
            print(
                f"group filter: {timing['group_ms']:.1f} ms (the first group's cells, with layout)"
            )
            print(
                f"sort list:    {timing['sort_ms']:.1f} ms (unexpected cells by scenario, with layout)"
            )
            print(f"open a cell:  {timing['open_ms']:.1f} ms (detail panel, with layout)")
    return 0 if size < SIZE_LIMIT else 1


if __name__ == "__main__":
    sys.exit(main())
