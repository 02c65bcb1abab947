"""What a cassette finds, beside the built-in scenario it was recorded from: prints a table.

    python -m tests.benchmarks.cassette_parity --runtime agno [--modes M,N] [--points P]
                                               [--workers 2] [--seed 1] [--out DIR]
    python -m tests.benchmarks.cassette_parity --compare BUILTIN.json CASSETTE.json

Records the `research` agent on the runtime against the stand-in provider
(`killpoint.scenarios.stand_in`, no key), then runs one campaign with `--scenarios
research` and one with `--scenarios cassette:<the recording>`, the same plan and seed
(default: every mode of the runtime, every default kind, SQLite), one after the other,
each writing its JSON report into --out. `--compare` only reads two such reports.

A finding class is a finding group's key (kind, tool, path pattern). A cell is matched
across the two by mode, store and schedule: the cell ids differ only by scenario name.
For each class: the cells the built-in run finds it in, the cassette run's, the built-in's
cells the cassette run misses it in (and the reverse). The last line says whether every
class of the built-in is found in the cassette run at every cell the built-in finds it in.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

CellKey = tuple[str, str, str]  # mode, store, schedule


def _cell_key(cell: dict[str, Any]) -> CellKey:
    return (cell["mode"], cell["store"], " ".join(cell["schedule"]))


def classes(report: dict[str, Any]) -> dict[str, set[CellKey]]:
    """Each finding class (its group key; the kind when a finding has none) -> the cells
    that have it, keyed without the scenario name."""
    found: dict[str, set[CellKey]] = defaultdict(set)
    for cell in report["cells"]:
        for finding in cell.get("findings", []):
            found[finding.get("group") or finding["kind"]].add(_cell_key(cell))
    return found


def _where(cells: set[CellKey], limit: int = 4) -> str:
    names = sorted(f"{mode}/{schedule}" for mode, _store, schedule in cells)
    more = f" +{len(names) - limit}" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def compare(builtin: dict[str, Any], cassette: dict[str, Any]) -> tuple[list[str], bool]:
    """The table's lines, and whether every built-in class is found where the built-in
    finds it."""
    ours, theirs = classes(builtin), classes(cassette)
    b_cells = {_cell_key(c) for c in builtin["cells"]}
    c_cells = {_cell_key(c) for c in cassette["cells"]}
    lines = [
        f"cells: built-in {len(b_cells)}, cassette {len(c_cells)}, "
        f"in both {len(b_cells & c_cells)}",
        f"only in the built-in's plan: {_where(b_cells - c_cells) or 'none'}",
        f"only in the cassette's plan: {_where(c_cells - b_cells) or 'none'}",
        "",
        f"{'class (kind:tool:path)':<62} {'built-in':>8} {'cassette':>8} {'missed':>6}"
        f" {'extra':>5}  missed at",
    ]
    complete = True
    for key in sorted(set(ours) | set(theirs)):
        b, c = ours.get(key, set()), theirs.get(key, set())
        missed, extra = b - c, c - b
        complete = complete and not missed
        lines.append(
            f"{key:<62} {len(b):>8} {len(c):>8} {len(missed):>6} {len(extra):>5}  {_where(missed)}"
        )
    missing = sorted(k for k in ours if k not in theirs)
    b_verdicts = {_cell_key(c): (c["verdict"], c["expected"]) for c in builtin["cells"]}
    c_verdicts = {_cell_key(c): (c["verdict"], c["expected"]) for c in cassette["cells"]}
    differ = {k for k in b_verdicts.keys() & c_verdicts.keys() if b_verdicts[k] != c_verdicts[k]}
    lines += [
        "",
        f"cells whose verdict (or its being expected) differs: {len(differ)}"
        + (f": {_where(differ, limit=8)}" if differ else ""),
        f"classes: built-in {len(ours)}, cassette {len(theirs)}; "
        f"never found from the cassette: {', '.join(missing) or 'none'}",
        "every built-in class found where the built-in finds it: " + ("yes" if complete else "no"),
    ]
    return lines, complete


def _killpoint(*args: str, env: dict[str, str] | None = None) -> None:
    exe = Path(sys.executable).with_name("killpoint")
    cmd = [str(exe) if exe.exists() else "killpoint", *args]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    # A matrix exits 1 when it finds something: that is its result, not a failure here.
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")


def _loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def measure(args: argparse.Namespace, out: Path) -> tuple[Path, Path]:
    """Records the agent, runs both campaigns; returns the two reports' paths."""
    cassette = out / f"research-{args.runtime}.json"
    env = {**os.environ, "OPENAI_API_KEY": "sk-stand-in"}
    record = ["killpoint", "record", "--runtime", args.runtime, "--scenario", "research"]
    record += ["--out", str(cassette)]
    subprocess.run(
        [sys.executable, "-m", "killpoint.scenarios.stand_in", "research", "--", *record],
        env={**env, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}"},
        check=True,
        capture_output=True,
    )
    plan = ["--runtime", args.runtime, "--workers", str(args.workers), "--seed", str(args.seed)]
    plan += ["--points", args.points, "--keep", "none"]
    if args.modes:
        plan += ["--modes", args.modes]
    reports = []
    for name, scenario in (("builtin", "research"), ("cassette", f"cassette:{cassette}")):
        report = out / f"{args.runtime}-{name}.json"
        t0, load0 = time.monotonic(), _loadavg()
        _killpoint(
            "matrix",
            *plan,
            *("--scenarios", scenario, "--json", str(report)),
            *("--report", str(report.with_suffix(".html"))),
        )
        print(
            f"{name}: {time.monotonic() - t0:.0f} s, load {load0} -> {_loadavg()}",
            file=sys.stderr,
        )
        reports.append(report)
    return reports[0], reports[1]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runtime", default="agno", help="agno, langgraph, ...")
    parser.add_argument("--modes", default="", help="comma-separated (default: every mode)")
    parser.add_argument("--points", default="all")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--out", type=Path, help="where the cassette and reports go")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("BUILTIN", "CASSETTE"))
    args = parser.parse_args()

    if args.compare:
        builtin_path, cassette_path = args.compare
    else:
        out = args.out or Path(tempfile.mkdtemp(prefix="killpoint-parity-"))
        out.mkdir(parents=True, exist_ok=True)
        builtin_path, cassette_path = measure(args, out)
    builtin = json.loads(builtin_path.read_text())
    cassette = json.loads(cassette_path.read_text())
    print(f"{builtin['runtime']}: {builtin['command']}\n  vs {cassette['command']}")
    lines, _complete = compare(builtin, cassette)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
