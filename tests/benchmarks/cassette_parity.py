"""What a cassette finds, beside the built-in scenario it was recorded from: prints a table.

    python -m tests.benchmarks.cassette_parity --runtime agno [--modes M,N] [--points P]
                                               [--workers 2] [--seed 1] [--repeats 2]
                                               [--out DIR]
    python -m tests.benchmarks.cassette_parity --builtin A.json [A2.json] --cassette C.json [C2.json]

Records the `research` agent on the runtime against the stand-in provider
(`killpoint.scenarios.stand_in`, no key), then runs the same plan and seed (default: every
mode of the runtime, every default kind, SQLite) with `--scenarios research` and with
`--scenarios cassette:<the recording>`, --repeats times each, one campaign after another,
each writing its JSON report into --out. `--builtin ... --cassette ...` only reads reports.

A finding class is a finding group's key (kind, tool, path pattern). A cell is matched
across campaigns by mode, store and schedule: the cell ids differ only by scenario name.
Races (two resumers, a stale worker waking, which call of a parallel batch a kill lands
in) make some cells' findings vary from one run of the same campaign to the next. So, per
class: `built-in` counts the cells where every built-in run finds it, `flaky` the cells
where some built-in runs do and others do not; `cassette` the cells where a cassette run
finds it; `missed` the cells every built-in run finds it in and no cassette run does
(where, after the table); `extra` the cells a cassette run finds it in and no built-in run.
The last line says whether the cassette runs miss any class at any such cell.
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
Report = dict[str, Any]


def _cell_key(cell: dict[str, Any]) -> CellKey:
    return (cell["mode"], cell["store"], " ".join(cell["schedule"]))


def classes(report: Report) -> dict[str, set[CellKey]]:
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


def _verdicts(report: Report) -> dict[CellKey, tuple[str, bool]]:
    return {_cell_key(c): (c["verdict"], c["expected"]) for c in report["cells"]}


def compare(builtins: list[Report], cassettes: list[Report]) -> tuple[list[str], bool]:
    """The table's lines, and whether every class the built-in runs all find at a cell is
    found there by a cassette run."""
    b_cells = set.intersection(*({_cell_key(c) for c in r["cells"]} for r in builtins))
    c_cells = set.union(*({_cell_key(c) for c in r["cells"]} for r in cassettes))
    ours = [classes(r) for r in builtins]
    theirs = [classes(r) for r in cassettes]
    keys = sorted(set().union(*ours, *theirs))
    lines = [
        f"runs: built-in {len(builtins)}, cassette {len(cassettes)}",
        f"cells: built-in {len(b_cells)}, cassette {len(c_cells)}, "
        f"in both {len(b_cells & c_cells)}",
        f"only in the built-in's plan: {_where(b_cells - c_cells) or 'none'}",
        f"only in the cassette's plan: {_where(c_cells - b_cells) or 'none'}",
        "",
        f"{'class (kind:tool:path)':<62} {'built-in':>8} {'flaky':>5} {'cassette':>8}"
        f" {'missed':>6} {'extra':>5}",
    ]
    misses: dict[str, set[CellKey]] = {}
    for key in keys:
        every = set.intersection(*(o.get(key, set()) for o in ours))
        some = set.union(*(o.get(key, set()) for o in ours))
        found = set.union(*(t.get(key, set()) for t in theirs))
        missed, extra = every - found, found - some
        if missed:
            misses[key] = missed
        lines.append(
            f"{key:<62} {len(every):>8} {len(some - every):>5} {len(found):>8}"
            f" {len(missed):>6} {len(extra):>5}"
        )
    lines.append("")
    lines += [f"missed {key} at: {_where(cells, limit=8)}" for key, cells in misses.items()]
    # A cell's verdict counts only where every built-in run agrees on it.
    b_verdicts = [_verdicts(r) for r in builtins]
    steady = {
        k: v for k, v in b_verdicts[0].items() if all(other.get(k) == v for other in b_verdicts)
    }
    c_verdicts = [_verdicts(r) for r in cassettes]
    differ = {k for k, v in steady.items() if all(c.get(k, v) != v for c in c_verdicts)}
    never = sorted(
        k for k in keys if all(o.get(k) for o in ours) and not any(t.get(k) for t in theirs)
    )
    lines += [
        f"cells whose verdict differs between built-in runs: {len(b_cells) - len(steady)}",
        f"cells of a steady built-in verdict no cassette run gives: {len(differ)}"
        + (f": {_where(differ, limit=8)}" if differ else ""),
        f"classes: built-in {len(set().union(*ours))}, cassette {len(set().union(*theirs))};"
        f" never found from the cassette: {', '.join(never) or 'none'}",
        "every built-in class found where every built-in run finds it: "
        + ("no" if misses else "yes"),
    ]
    return lines, not misses


def _killpoint(*args: str) -> None:
    exe = Path(sys.executable).with_name("killpoint")
    cmd = [str(exe) if exe.exists() else "killpoint", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    # A matrix exits 1 when it finds something: that is its result, not a failure here.
    if done.returncode not in (0, 1):
        sys.exit(f"{' '.join(cmd)} exited {done.returncode}:\n{done.stdout}\n{done.stderr}")


def _loadavg() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def measure(args: argparse.Namespace, out: Path) -> tuple[list[Path], list[Path]]:
    """Records the agent, runs the campaigns; returns the built-in's reports and the
    cassette's."""
    cassette = out / f"research-{args.runtime}.json"
    env = {**os.environ, "OPENAI_API_KEY": "sk-stand-in"}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    record = ["killpoint", "record", "--runtime", args.runtime, "--scenario", "research"]
    record += ["--out", str(cassette)]
    subprocess.run(
        [sys.executable, "-m", "killpoint.scenarios.stand_in", "research", "--", *record],
        env=env,
        check=True,
        capture_output=True,
    )
    plan = ["--runtime", args.runtime, "--workers", str(args.workers), "--seed", str(args.seed)]
    plan += ["--points", args.points, "--keep", "none"]
    if args.modes:
        plan += ["--modes", args.modes]
    reports: dict[str, list[Path]] = {"builtin": [], "cassette": []}
    for n in range(1, args.repeats + 1):
        for name, scenario in (("builtin", "research"), ("cassette", f"cassette:{cassette}")):
            report = out / f"{args.runtime}-{name}-{n}.json"
            t0, load0 = time.monotonic(), _loadavg()
            _killpoint(
                "matrix",
                *plan,
                *("--scenarios", scenario, "--json", str(report)),
                *("--report", str(report.with_suffix(".html"))),
            )
            print(
                f"{report.name}: {time.monotonic() - t0:.0f} s, load {load0} -> {_loadavg()}",
                file=sys.stderr,
            )
            reports[name].append(report)
    return reports["builtin"], reports["cassette"]


def read(paths: list[Path]) -> list[dict[str, Any]]:
    return [json.loads(p.read_text()) for p in paths]


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runtime", default="agno", help="agno, langgraph, ...")
    parser.add_argument("--modes", default="", help="comma-separated (default: every mode)")
    parser.add_argument("--points", default="all")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--repeats", type=int, default=1, help="runs of each campaign")
    parser.add_argument("--out", type=Path, help="where the cassette and reports go")
    parser.add_argument("--builtin", nargs="+", type=Path, metavar="REPORT", default=[])
    parser.add_argument("--cassette", nargs="+", type=Path, metavar="REPORT", default=[])
    args = parser.parse_args()

    if args.builtin or args.cassette:
        if not (args.builtin and args.cassette):
            parser.error("give both --builtin REPORT... and --cassette REPORT...")
        builtins, cassettes = read(args.builtin), read(args.cassette)
    elif args.out:
        args.out.mkdir(parents=True, exist_ok=True)
        builtins, cassettes = (read(p) for p in measure(args, args.out))
    else:  # the reports are only the means: gone once compared (--out keeps them)
        with tempfile.TemporaryDirectory(prefix="killpoint-parity-") as tmp:
            builtins, cassettes = (read(p) for p in measure(args, Path(tmp)))
    print(f"{builtins[0]['runtime']}: {builtins[0]['command']}\n  vs {cassettes[0]['command']}")
    lines, _complete = compare(builtins, cassettes)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
