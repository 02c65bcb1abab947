"""`ulimit -u` for real: a campaign run as a user of its own under RLIMIT_NPROC, where
threads and forks are refused in the engine, the forkserver, the workers and the tools.

Each cell is judged or `unavailable` with a `resource-exhausted` finding naming the
limit and its fix; none is `missed`, `unresumable`, `hung` or `error`, no row is called
nondeterministic, nothing is printed as a traceback, and no process of the user is left.
"""

# ruff: noqa: SIM300

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from killpoint.workers.limits import REFUSALS, exhausted, nproc_enforced
from tests.harness.unprivileged import outliving, run_as, user_home

REPO = Path(__file__).resolve().parents[3]
KILLPOINT = [sys.executable, "-m", "killpoint.cli.main"]
UNJUDGED = {"missed", "unresumable", "hung", "error"}

pytestmark = pytest.mark.slow


def campaign(nproc: int, *options: str) -> tuple[Any, dict[str, Any], int]:
    """`killpoint matrix OPTIONS` as a user of its own under `ulimit -u NPROC`."""
    with user_home() as (uid, home):
        done = run_as(
            uid, nproc,
            [*KILLPOINT, "matrix", *options, "--work-dir", str(home),
             "--json", str(home / "r.json"), "--report", str(home / "r.html")],
            home,
        )  # fmt: skip
        assert not outliving(uid), "a process of the campaign outlived it"
        assert "Traceback" not in done.stderr, done.stderr[-3000:]
        assert (home / "r.json").exists(), done.stdout[-2000:] + done.stderr[-3000:]
        report = json.loads((home / "r.json").read_text())
    return done, report, nproc


def assert_judged_or_named(report: dict[str, Any], nproc: int) -> list[dict[str, Any]]:
    """Every cell judged, or unavailable for the limit (named, with its fix); returns
    the unavailable ones."""
    unavailable = []
    for cell in report["cells"]:
        assert cell["verdict"] not in UNJUDGED, (cell["id"], cell["detail"])
        assert cell["expected"], (cell["id"], cell["detail"])
        if cell["verdict"] == "unavailable":
            assert ["resource-exhausted"] == [f["kind"] for f in cell["findings"]]
            assert f"is {nproc} (RLIMIT_NPROC, `ulimit -u`" in cell["detail"]
            assert "--workers 1" in cell["detail"]
            unavailable.append(cell)
    return unavailable


def test_a_limit_no_worker_fits_under_makes_every_cell_unavailable() -> None:
    """Under `ulimit -u 6` not one baseline can run (the engine's threads, the
    forkserver and a worker's threads need more): each cell says so, exit 0."""
    done, report, nproc = campaign(
        6, "--scenarios", "research,parallel-fetch", "--modes", "tool-batch",
        "--points", "boundaries", "--workers", "2",
    )  # fmt: skip
    assert 0 == done.returncode, done.stderr[-3000:]
    unavailable = assert_judged_or_named(report, nproc)
    assert report["cells"] and len(unavailable) == len(report["cells"])
    assert "thread or process limit" in done.stderr


def test_a_limit_some_workers_fit_under_judges_the_rest() -> None:
    """Under `ulimit -u 24` with four cells at once, threads and forks are refused here
    and there (in tools, resumers, the forkserver): the cells that met a refusal are
    unavailable, the others judged, and the reference runtime passes (exit 0)."""
    done, report, nproc = campaign(
        24, "--scenarios", "research,parallel-fetch,long-chain",
        "--modes", "tool-batch,tool", "--points", "boundaries", "--workers", "4",
    )  # fmt: skip
    assert 0 == done.returncode, done.stdout[-3000:] + done.stderr[-3000:]
    assert_judged_or_named(report, nproc)
    assert "happens without a crash" not in done.stdout  # no row blamed for a refused thread


def test_a_worker_notes_each_thread_and_fork_it_is_refused() -> None:
    """What a runtime or a tool asks for and is refused is in the cell's folder,
    whoever catches the error afterwards."""
    with user_home() as (uid, home):
        noted(uid, home)


def noted(uid: int, home: Path) -> None:
    script = f"""
import os, threading
from pathlib import Path
from killpoint.workers.limits import record_refusals
record_refusals(Path({str(home)!r}))
hold = threading.Event()
started = []
try:
    while True:
        t = threading.Thread(target=hold.wait, daemon=True); t.start(); started.append(t)
except RuntimeError:
    pass
try:
    os.fork()
except BlockingIOError:
    pass
hold.set()
print(len(started))
"""
    done = run_as(uid, 4, [sys.executable, "-c", script], home)
    assert 0 == done.returncode, done.stderr
    assert 0 < int(done.stdout) < 4  # some started, then the limit held (the kernel counts)
    lines = (home / REFUSALS).read_text().splitlines()
    assert 2 == len(lines), lines
    assert "could not start a thread" in lines[0] and "can't start new thread" in lines[0]
    assert "could not start a process: BlockingIOError" in lines[1]


def test_the_sentence_names_the_limit_in_force_and_its_fix() -> None:
    """As the user, RLIMIT_NPROC is named with its value and two fixes; as root (never
    held to it) it is not named."""
    assert exhausted("a log with nothing refused in it") is None
    if nproc_enforced():
        pytest.skip("this test runs as a user held to RLIMIT_NPROC")
    as_root = exhausted("RuntimeError: can't start new thread")
    assert as_root is not None and "RLIMIT_NPROC" not in as_root
    script = (
        "from killpoint.workers.limits import exhausted; "
        'print(exhausted("RuntimeError: can\'t start new thread"))'
    )
    with user_home() as (uid, home):
        done = run_as(uid, 50, [sys.executable, "-c", script], home)
    assert 0 == done.returncode, done.stderr
    assert done.stdout.startswith("killpoint could not start a thread for this cell: ")
    assert f"user {uid} is 50 (RLIMIT_NPROC, `ulimit -u`" in done.stdout
    assert "`ulimit -u 4096`" in done.stdout and "`--workers 1`" in done.stdout
