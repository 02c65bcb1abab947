"""The crash matrix of an earlier revision and of this tree, one after the other in one run:
prints figures, asserts nothing.

    python -m tests.benchmarks.against_rev REV [--scenarios a,b] [--points P] [--workers N]
                                               [--rounds N]

REV (a commit, tag or branch of this repository) is exported with `git archive` and
installed without its dependencies into a throwaway folder, which goes first on the
PYTHONPATH of its side; this tree's side runs the killpoint this interpreter imports. Each
side runs `killpoint matrix` on its own default plan (or the same --scenarios/--points
when given), with its own defaults for everything else unless --workers is given: what a
user of each revision gets from the same command. For each: cells, wall time, cells per
second, CPU per cell (the command and every process under it, reaped), and the median
cell per point kind, side by side. The two plans may differ (a kind added since REV):
the cells line says how many each ran. With --rounds N each side runs N times, in the order
ABBA... (REV first in odd rounds, this tree first in even ones), so that a machine whose
speed drifts during the run favours neither; the figures are over all rounds, and the
ratio of each round is printed too.
The CPU per cell of this tree against the revision's is printed too (by round as well):
on a shared machine it moves less with the load than the cells per second do.
Targets: issue 32, this tree's cells per second >= 2x those of main when the issue was
filed; issue 53, this tree's CPU per cell <= 0.7x that of main when it was filed (54286c3),
both measured in the same run.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
# Runs the command as its console script does, whichever killpoint the path finds first.
ENTRY = "import sys; from killpoint.cli.main import entry; sys.exit(entry())"


def export(rev: str, into: Path) -> str:
    """Install revision `rev` of this repository, without dependencies, into `into`;
    returns its short hash."""
    short = subprocess.run(
        ["git", "-C", str(REPO), "rev-parse", "--short", f"{rev}^{{commit}}"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()
    tree = into / "tree"
    tree.mkdir()
    archive = subprocess.run(
        ["git", "-C", str(REPO), "archive", "--format=tar", short],
        check=True,
        capture_output=True,
    ).stdout
    archive_path = into / "tree.tar"
    archive_path.write_bytes(archive)
    with tarfile.open(archive_path) as tar:
        tar.extractall(tree, filter="data")
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
         "--target", str(into / "site"), str(tree)],
        check=True,
    )  # fmt: skip
    return short


def children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_side(site: Path | None, options: list[str], out: Path) -> dict[str, Any]:
    """One `killpoint matrix`: its wall and CPU seconds and the cells of its JSON."""
    env = dict(os.environ)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(site), env.get("PYTHONPATH")]))
    report = out.with_suffix(".json")
    command = [sys.executable, "-c", ENTRY, "matrix", *options]
    command += ["--json", str(report), "--report", str(out.with_suffix(".html"))]
    cpu0, t0 = children_cpu(), time.perf_counter()
    # Its own empty folder as the working directory: no scenarios/ or runtime/ of this
    # repository is importable from there.
    done = subprocess.run(command, cwd=out.parent, env=env, capture_output=True, text=True)
    wall, cpu = time.perf_counter() - t0, children_cpu() - cpu0
    if done.returncode not in (0, 1):  # 1: an unexpected verdict, still figures
        sys.exit(f"against_rev: {' '.join(command)} exited {done.returncode}:\n{done.stderr}")
    cells = json.loads(report.read_text())["cells"]
    return {"wall": wall, "cpu": cpu, "cells": cells}


def kind_of(cell: dict[str, Any]) -> str:
    """The first point's kind from a cell id (`runtime/scenario/mode/store/kind:k[,...]`)."""
    return cell["id"].rsplit("/", 1)[-1].split(",")[0].split(":")[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev", help="a commit, tag or branch of this repository")
    parser.add_argument("--scenarios", default="", help="comma-separated (default: each's)")
    parser.add_argument("--points", default="", help="(default: each side's default)")
    parser.add_argument("--workers", default="", help="cells at once (default: each's)")
    parser.add_argument("--rounds", type=int, default=1, help="runs of each side (ABBA order)")
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds {args.rounds}: give 1 or more")
    options: list[str] = []
    for name in ("scenarios", "points", "workers"):
        if getattr(args, name):
            options += [f"--{name}", getattr(args, name)]

    runs: dict[str, list[dict[str, Any]]] = defaultdict(list)
    with tempfile.TemporaryDirectory(prefix="killpoint-against-") as tmp:
        root = Path(tmp)
        (root / "rev").mkdir()
        short = export(args.rev, root / "rev")
        sites = {short: root / "rev" / "site", "this tree": None}
        for n in range(args.rounds):
            order = [short, "this tree"] if n % 2 == 0 else ["this tree", short]
            for name in order:
                out = root / f"run-{n}-{'rev' if name == short else 'this'}"
                out.mkdir()
                runs[name].append(run_side(sites[name], options, out / "m"))
    sides = {
        name: {
            "wall": sum(r["wall"] for r in rs),
            "cpu": sum(r["cpu"] for r in rs),
            "cells": [c for r in rs for c in r["cells"]],
        }
        for name, rs in runs.items()
    }

    cores = os.cpu_count() or 1
    print(f"cores                       {cores}")
    print(f"options                     {' '.join(options) or '(each side its defaults)'}")
    if args.rounds > 1:
        print(f"rounds                      {args.rounds} (figures over all of them)")
    print("")

    def row(label: str, values: list[str]) -> None:
        print(f"{label:<28}" + "".join(f"{v:>16}" for v in values))

    row("", list(sides))
    rate: dict[str, float] = {}
    for name, side in sides.items():
        rate[name] = len(side["cells"]) / side["wall"]
    row(
        "cells (unexpected)",
        [f"{len(s['cells'])} ({sum(not c['expected'] for c in s['cells'])})" for s in sides.values()],
    )  # fmt: skip
    row("wall time, s", [f"{s['wall']:.1f}" for s in sides.values()])
    row("cells per second", [f"{rate[n]:.2f}" for n in sides])
    row("CPU per cell, ms", [f"{1000 * s['cpu'] / len(s['cells']):.0f}" for s in sides.values()])
    print("median cell by kind, ms (cells)")
    by: dict[str, dict[str, list[float]]] = {n: defaultdict(list) for n in sides}
    for name, side in sides.items():
        for cell in side["cells"]:
            by[name][kind_of(cell)].append(cell["seconds"])
    kinds = sorted(set().union(*(b.keys() for b in by.values())))
    for kind in kinds:
        row(
            f"  {kind}",
            [
                f"{1000 * statistics.median(by[n][kind]):.0f} ({len(by[n][kind])})"
                if by[n][kind] else "-"
                for n in sides
            ],
        )  # fmt: skip
    print(f"this tree / {short} cells per second {rate['this tree'] / rate[short]:.2f}x")
    if args.rounds > 1:
        each = [
            (len(t["cells"]) / t["wall"]) / (len(r["cells"]) / r["wall"])
            for r, t in zip(runs[short], runs["this tree"], strict=True)
        ]
        print(f"  by round: {', '.join(f'{x:.2f}x' for x in each)}")

    def cpu_per_cell(side: dict[str, Any]) -> float:
        return float(side["cpu"]) / max(1, len(side["cells"]))

    cpu_ratio = cpu_per_cell(sides["this tree"]) / cpu_per_cell(sides[short])
    print(f"this tree / {short} CPU per cell {cpu_ratio:.2f}x")
    if args.rounds > 1:
        each = [
            cpu_per_cell(t) / cpu_per_cell(r)
            for r, t in zip(runs[short], runs["this tree"], strict=True)
        ]
        print(f"  CPU by round: {', '.join(f'{x:.2f}x' for x in each)}")
    # A figure is only as good as its run: name what was unexpected, to replay it.
    for name, side in sides.items():
        for cell in [c for c in side["cells"] if not c["expected"]][:5]:
            print(f"unexpected on {name}: {cell['id']} ({cell['verdict']}: {cell['detail'][:160]})")


if __name__ == "__main__":
    main()
