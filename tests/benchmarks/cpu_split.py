"""Where a crash matrix's CPU goes, from one `killpoint matrix` of this tree: prints figures,
asserts nothing.

    python -m tests.benchmarks.cpu_split [killpoint matrix options]

Three parts, each in ms per cell and as a share of the whole:
- the engine: killpoint's own process, every thread (planning, polling the store, judging,
  the reports);
- the forkserver: its preload, once, and its side of every fork;
- the workers: every process forked from it, from the fork to the exit (the forkserver
  reaps them, so the kernel adds them to its children's time). This is the runtime under
  test and what killpoint does inside it (the scripted model, the gates, the run's
  history), and the kernel's copy-on-write of the pages it touches.
The rest is what else the campaign started (a power-loss mount helper), give or take the
kernel's clock tick in which /proc counts the forkserver's figures. With no options it runs
the default matrix.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

# Run in a process of its own: the forkserver's figures are read before it is stopped.
CHILD = r"""
import json, os, resource, sys
from killpoint.cli.main import main
from killpoint.workers import processes

code = main(sys.argv[1:])
pid = processes.forkserver_pid()
forkserver = children = 0.0
if pid is not None:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    tick = os.sysconf("SC_CLK_TCK")
    utime, stime, cutime, cstime = (int(x) / tick for x in fields[11:15])
    forkserver, children = utime + stime, cutime + cstime
processes.stop_forkserver()
own = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"code": code, "engine": own.ru_utime + own.ru_stime,
                  "forkserver": forkserver, "workers": children}), file=sys.stderr)
"""


def main() -> None:
    options = sys.argv[1:]
    with tempfile.TemporaryDirectory(prefix="killpoint-cpu-split-") as tmp:
        report = Path(tmp) / "m.json"
        command = [sys.executable, "-c", CHILD, "matrix", *options, "--json", str(report)]
        command += ["--report", str(Path(tmp) / "m.html")]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        done = subprocess.run(command, cwd=tmp, capture_output=True, text=True)
        wall = time.perf_counter() - t0
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        if done.returncode not in (0, 1) or not report.exists():
            sys.exit(f"cpu_split: killpoint matrix exited {done.returncode}:\n{done.stderr}")
        parts = json.loads(done.stderr.strip().splitlines()[-1])
        cells = len(json.loads(report.read_text())["cells"])
    total = (after.ru_utime + after.ru_stime) - (before.ru_utime + before.ru_stime)
    rest = total - parts["engine"] - parts["forkserver"] - parts["workers"]
    print(f"cores                    {os.cpu_count()}")
    print(f"options                  {' '.join(options) or '(the default matrix)'}")
    print(f"cells                    {cells}")
    print(f"wall time, s             {wall:.1f}")
    print(f"CPU, s                   {total:.1f}")
    print(f"CPU per cell, ms         {1000 * total / max(1, cells):.1f}")
    for name, seconds in (
        ("engine", parts["engine"]),
        ("forkserver", parts["forkserver"]),
        ("workers", parts["workers"]),
        ("rest", rest),
    ):
        share = 100 * seconds / total if total else 0.0
        per_cell = 1000 * seconds / max(1, cells)
        print(f"  {name:<22} {per_cell:8.1f} ms per cell {share:6.1f}%")


if __name__ == "__main__":
    main()
