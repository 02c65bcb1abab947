"""The price of being a fresh process: one uninterrupted run in a worker just forked from a
warm parent, against the same run again in that worker. Prints figures, asserts nothing.

    python -m tests.benchmarks.fork_price [--scenario research] [--mode tool-batch]
                                          [--forks 20] [--no-huge-pages]

This process is set up as the forkserver is (killpoint.workers.processes.PRELOAD, the
collector off while it imports, the warm-up run, the heap frozen, and on huge pages as a
campaign of many cells asks), then forks `--forks` children. Each runs the scenario three
times and reports each run's CPU and page faults; the parent reads each child's whole CPU,
from its fork to its exit, as it reaps it. A bare child (fork, then exit) gives the fork's
own price, and a child writing to pages of its parent's heap the price of one page fault.

A worker that resumes a run must be a fresh process (that is what a crash leaves the
runtime to recover in), so what the first run costs over the second is a floor under every
cell's CPU that the harness cannot lower: CPython writes the reference count of every
object it touches, and each page of the parent's heap first written in a child is copied
(one page fault) while the parent still maps it.
"""

from __future__ import annotations

import argparse
import importlib
import mmap
import os
import resource
import statistics
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

# Not the forkserver's own process set-up (its signals, its watch on the parent, the
# subreaper): only what shapes its heap.
SKIPPED = {
    "killpoint.workers.forkserver.signals",
    "killpoint.workers.forkserver.watch",
    "killpoint.workers.forkserver.subreaper",
    "killpoint.workers.forkserver.fork_refused",
    "killpoint.workers.forkserver.main",
}
RUNS = 3  # per child: the first, and two more to see that the second is steady
TOUCHED_PAGES = 20_000  # for the price of a page fault: 80 MB copied, page by page
PAGE = mmap.PAGESIZE


@dataclass(frozen=True)
class Usage:
    user: float  # seconds
    system: float
    faults: int  # minor page faults

    @property
    def cpu(self) -> float:
        return self.user + self.system

    def __sub__(self, other: Usage) -> Usage:
        return Usage(self.user - other.user, self.system - other.system, self.faults - other.faults)


def usage_of(r: resource.struct_rusage) -> Usage:
    return Usage(r.ru_utime, r.ru_stime, r.ru_minflt)


def warm_like_the_forkserver(huge_pages: bool) -> None:
    from killpoint.workers import processes

    importlib.import_module("killpoint.workers.forkserver.gc_off")
    for name in processes.PRELOAD:
        if name not in SKIPPED:
            importlib.import_module(name)
    importlib.import_module(processes.WARM)
    if huge_pages:
        importlib.import_module(processes.HUGE_HEAP)


def in_child(work: Path, scenario: str, mode: str, report: int) -> None:
    """Runs, writes one line per run to the pipe `report`, and exits without clean-up (as
    a worker does)."""
    import gc

    from killpoint.adapters.registry import load_adapter
    from killpoint.values.scenario_refs import resolve_scenario
    from tests.benchmarks.runtime_floor import one_run

    gc.enable()  # as a worker does: the runtime runs as it would anywhere
    code = 0
    try:
        adapter = load_adapter("reference")
        resolved = resolve_scenario(scenario)
        lines = []
        for n in range(RUNS):
            (work / str(n)).mkdir()
            before = usage_of(resource.getrusage(resource.RUSAGE_SELF))
            one_run(adapter, resolved, mode, work / str(n))
            spent = usage_of(resource.getrusage(resource.RUSAGE_SELF)) - before
            lines.append(f"{spent.user} {spent.system} {spent.faults}\n")
        os.write(report, "".join(lines).encode())
    except BaseException as exc:  # reported by the parent, which sees no figures
        os.write(report, f"error {type(exc).__name__}: {exc}\n".encode())
        code = 1
    os._exit(code)


def forked(child: Callable[..., None], *args: object) -> tuple[Usage, str]:
    """The child's whole usage (fork to exit, as its parent reaps it) and what it wrote."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        try:
            child(*args, write)
        finally:
            os._exit(1)
    os.close(write)
    with os.fdopen(read) as f:
        said = f.read()
    _, status, rusage = os.wait4(pid, 0)
    if os.waitstatus_to_exitcode(status) != 0 or said.startswith("error"):
        sys.exit(f"fork_price: a child failed: {said.strip() or status}")
    return usage_of(rusage), said


def bare(report: int) -> None:
    os._exit(0)


def touching(heap: mmap.mmap, report: int) -> None:
    before = usage_of(resource.getrusage(resource.RUSAGE_SELF))
    for offset in range(0, TOUCHED_PAGES * PAGE, PAGE):
        heap[offset] = 2
    spent = usage_of(resource.getrusage(resource.RUSAGE_SELF)) - before
    os.write(report, f"{spent.user} {spent.system} {spent.faults}\n".encode())
    os._exit(0)


def parse(line: str) -> Usage:
    user, system, faults = line.split()
    return Usage(float(user), float(system), int(faults))


def mean(usages: list[Usage]) -> Usage:
    """A mean, not a median: the kernel counts CPU time in clock ticks (4 ms here), and
    only a mean of many runs resolves less than a tick."""
    return Usage(
        statistics.fmean(u.user for u in usages),
        statistics.fmean(u.system for u in usages),
        round(statistics.fmean(u.faults for u in usages)),
    )


def show(label: str, u: Usage) -> None:
    print(
        f"{label:<34} {1000 * u.cpu:7.1f} ms CPU (user {1000 * u.user:.1f}, "
        f"system {1000 * u.system:.1f}), {u.faults:,} page faults"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m tests.benchmarks.fork_price")
    parser.add_argument("--scenario", default="research")
    parser.add_argument("--mode", default="tool-batch")
    parser.add_argument("--forks", type=int, default=20)
    parser.add_argument("--no-huge-pages", dest="huge", action="store_false")
    args = parser.parse_args(argv)
    if args.forks < 1:
        parser.error(f"--forks {args.forks}: give 1 or more")

    warm_like_the_forkserver(args.huge)
    import gc

    gc.freeze()  # what the warm-up froze stays frozen; so does what came after it
    from killpoint.engine.work_root import default_parent

    bare_runs, whole, runs = [], [], []
    with tempfile.TemporaryDirectory(prefix="killpoint-fork-price-", dir=default_parent()) as tmp:
        for n in range(args.forks):
            bare_runs.append(forked(bare)[0])
            work = Path(tmp) / f"child{n}"
            work.mkdir()
            usage, said = forked(in_child, work, args.scenario, args.mode)
            whole.append(usage)
            runs.append([parse(line) for line in said.splitlines()])
    heap = mmap.mmap(-1, TOUCHED_PAGES * PAGE, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for offset in range(0, len(heap), PAGE):
        heap[offset] = 1  # the parent's own pages, as its heap's are
    touched = [parse(forked(touching, heap)[1]) for _ in range(3)]
    heap.close()

    first = mean([r[0] for r in runs])
    again = mean([r[-1] for r in runs])
    child = mean(whole)
    fork = mean(bare_runs)
    fault = min(t.system / max(1, t.faults) for t in touched)
    fresh = first - again
    print(f"cores                              {os.cpu_count()}")
    print(f"run                                {args.scenario} ({args.mode}), reference runtime")
    print(f"forks                              {args.forks} (means below)")
    print(f"parent heap on huge pages          {'yes' if args.huge else 'no'}")
    show("a bare fork and exit", fork)
    show("the first run in a fresh fork", first)
    show("the same run again in that fork", again)
    show("the child, fork to exit", child)
    print(
        f"price of a fresh process, ms       {1000 * fresh.cpu:.1f} "
        f"({100 * fresh.cpu / first.cpu:.0f}% of the first run; "
        f"{fresh.faults:,} more page faults)"
    )
    print(f"one page fault, microseconds       {1e6 * fault:.2f} (copying a page of the parent's)")


if __name__ == "__main__":
    main()
