"""Worker processes: started warm, killed for real, never outliving their engine."""

# ruff: noqa: SIM300
from __future__ import annotations

import dataclasses
import json
import multiprocessing.connection
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path

import psutil
import pytest

from killpoint.values.timeline import Event
from killpoint.workers.processes import Worker, context
from killpoint.workers.worker import WorkerSpec

REPO = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


def spec(tmp_path: Path, scenario: str = "research", **kwargs: object) -> WorkerSpec:
    return WorkerSpec(
        runtime="reference",
        scenario=scenario,
        mode="tool-batch",
        store_url=f"sqlite:///{tmp_path / 'store.db'}",
        work_dir=str(tmp_path),
        session_id="s",
        **kwargs,  # type: ignore[arg-type]
    )


def test_a_worker_runs_with_the_collector_on_over_a_frozen_heap(tmp_path: Path) -> None:
    """The forkserver preloads with the collector off and freezes its heap (fewer pages
    copied into each worker); the runtime under test still runs with the collector on,
    and with Python's own Ctrl-C handler."""
    w = Worker(spec(tmp_path, scenario="tests.harness.scenarios_for_tests:WORKER_STATE"), [], 0.0)
    out = w.join(time.monotonic() + 60)
    assert "done" == out.kind, out.detail
    assert "enabled=True frozen=True sigint=handled" == out.results[-1]["content"]


def sigint_disposition(conn: Connection) -> None:
    conn.send(signal.getsignal(signal.SIGINT) == signal.SIG_IGN)


def test_a_fork_ignores_ctrl_c_until_it_leaves_the_engines_group() -> None:
    """A Ctrl-C to the campaign's process group reaches a worker forked a moment before
    its setsid(): it must not die of KeyboardInterrupt with a traceback on the
    campaign's stderr. Every process the forkserver forks starts with SIGINT ignored."""
    ctx = context()
    mine, theirs = ctx.Pipe()
    p = ctx.Process(target=sigint_disposition, args=(theirs,))
    p.start()
    theirs.close()
    try:
        assert mine.poll(60) and mine.recv() is True
    finally:
        p.join(60)
    assert 0 == p.exitcode


def test_a_killed_worker_is_reaped_with_its_real_exit_status(tmp_path: Path) -> None:
    """A worker parked at a gate is SIGKILLed with its process group and reaped: the
    exit status is -9 and the process is gone."""
    w = Worker(spec(tmp_path, gates=("model:2:received",)), [], time.monotonic())
    try:
        assert "gates" == w.wait(frozenset({"model:2:received"}), time.monotonic() + 60).kind
        assert -9 == w.kill()
        assert not psutil.pid_exists(w.pid)
    finally:
        if w.alive:
            w.kill()


def test_a_join_after_another_thread_killed_the_worker_reads_how_it_ended(
    tmp_path: Path,
) -> None:
    """Ctrl-C kills every worker from the main thread while a baseline's thread waits on
    one, or is about to: kill() closes the pipe under that wait, which then says how the
    worker ended instead of raising (an OSError there made a baseline "killpoint could
    not run", planned as a row of its own)."""
    w = Worker(spec(tmp_path, gates=("model:2:received",)), [], time.monotonic())
    try:
        assert "gates" == w.wait(frozenset({"model:2:received"}), time.monotonic() + 60).kind
        w.kill()
        out = w.join(time.monotonic() + 60)
    finally:
        if w.alive:
            w.kill()
    assert "died" == out.kind, out.detail


def test_waking_a_worker_that_is_already_gone_is_its_outcome_not_an_error(
    tmp_path: Path,
) -> None:
    """A paused worker that something else killed (the OOM killer, say) has no group
    left to wake: cont() records that on its lane, and the join reads how it ended."""
    timeline: list[Event] = []
    w = Worker(spec(tmp_path, gates=("model:2:received",)), timeline, time.monotonic())
    try:
        assert "gates" == w.wait(frozenset({"model:2:received"}), time.monotonic() + 60).kind
        w.stop()
        os.killpg(w.pid, signal.SIGKILL)
        # Gone for good once the forkserver has reaped it and sent its status.
        assert multiprocessing.connection.wait([w.proc.sentinel], 60)
        w.cont()
        out = w.join(time.monotonic() + 60)
    finally:
        if w.alive:
            w.kill()
    assert "done" != out.kind
    assert any("was gone before it could be woken" in e.text for e in timeline)


def test_concurrent_workers_record_their_real_exit_statuses(tmp_path: Path) -> None:
    """Cells run in threads: one thread starts a worker (multiprocessing reads the status
    of every finished child then) while another reaps its own. Every killed worker is
    recorded -9 and every finished one 0, never 255 (a status read twice, the second
    time at EOF), in its exitcode and in its timeline."""
    recorded: list[tuple[str, int | None, list[str]]] = []
    lock = threading.Lock()

    def cell(n: int) -> None:
        for round_ in range(4):
            timeline: list[Event] = []
            work = tmp_path / f"{n}-{round_}"
            work.mkdir()
            killed = Worker(spec(work, gates=("model:2:received",)), timeline, time.monotonic())
            killed.wait(frozenset({"model:2:received"}), time.monotonic() + 60)
            killed.kill()
            (work / "b").mkdir()
            finished = Worker(spec(work / "b"), timeline, time.monotonic())
            finished.join(time.monotonic() + 60)
            texts = [e.text for e in timeline if e.kind in ("kill", "end")]
            with lock:
                recorded.append(("killed", killed.exitcode, texts))
                recorded.append(("finished", finished.exitcode, texts))

    threads = [threading.Thread(target=cell, args=(n,)) for n in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert 32 == len(recorded)
    assert [] == [r for r in recorded if r[1] != {"killed": -9, "finished": 0}[r[0]]]
    assert all("worker killed (exit -9)" in texts for _, _, texts in recorded)


def test_a_worker_exits_when_its_engine_dies(tmp_path: Path) -> None:
    """An engine killed hard (no cleanup) leaves no worker behind: a worker parked at a
    gate sees its pipe close and exits."""
    script = textwrap.dedent(
        f"""
        import os, sys, time
        sys.path.insert(0, {str(REPO)!r})
        from killpoint.workers.processes import Worker
        from tests.harness.workers.test_processes import spec
        from pathlib import Path
        if __name__ == "__main__":
            w = Worker(spec(Path({str(tmp_path)!r}), gates=("model:2:received",)), [], time.monotonic())
            w.wait(frozenset({{"model:2:received"}}), time.monotonic() + 60)
            print(w.pid, flush=True)
            os._exit(0)  # the engine dies without killing its worker
        """
    )
    path = tmp_path / "engine.py"
    path.write_text(script)
    # A short one of its own: the dead engine cannot remove multiprocessing's socket
    # folder from it, and an AF_UNIX path holds at most 107 bytes.
    temp = tempfile.mkdtemp(prefix="kp-", dir="/tmp")
    try:
        out = subprocess.run(
            [sys.executable, str(path)],
            cwd=REPO,
            env={**os.environ, "TMPDIR": temp},
            capture_output=True,
            text=True,
            timeout=120,
        )
    finally:
        shutil.rmtree(temp)
    assert 0 == out.returncode, out.stderr
    pid = int(out.stdout.split()[0])
    try:
        worker = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return  # already gone
    _, alive = psutil.wait_procs([worker], timeout=30)
    assert [] == alive


COUNTING_MAIN = REPO / "tests" / "harness" / "fixtures" / "counting_main.py"


@pytest.mark.parametrize(
    "how",
    [["-m", "tests.harness.fixtures.counting_main"], [str(COUNTING_MAIN)]],
    ids=["python-m", "path"],
)
def test_the_parents_main_module_is_not_rerun_in_each_worker(
    tmp_path: Path, how: list[str]
) -> None:
    """`python -m NAME` (the benchmarks, a user's script) or a script by path (as the
    `killpoint` and `pytest` commands are): the forkserver runs the main module once and
    adopts it, so workers do not execute it again (CPython's own forkserver preload of
    `__main__` never takes effect, 3.11 to 3.13). It runs in the parent and once in the
    forkserver; three workers add nothing."""
    count = tmp_path / "count"
    out = subprocess.run(
        [sys.executable, *how],
        cwd=REPO,
        env={**os.environ, "COUNT_FILE": str(count)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert 0 == out.returncode, out.stderr
    assert 2 == len(count.read_text().splitlines())


def test_the_main_module_is_described_by_name_or_by_path(tmp_path: Path) -> None:
    script = "import os, killpoint.workers.processes as p; print(p.main_module(os.getpid()))"
    (tmp_path / "named.py").write_text(script)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, *args], cwd=tmp_path, capture_output=True, text=True)

    by_name, by_path, by_c = run("-m", "named"), run("named.py"), run("-c", script)
    assert "named" == json.loads(by_name.stdout)["name"], by_name.stderr
    assert str(tmp_path / "named.py") == json.loads(by_path.stdout)["path"], by_path.stderr
    assert "None" == by_c.stdout.strip(), by_c.stderr


def test_a_main_module_that_fails_to_import_is_left_to_the_workers(tmp_path: Path) -> None:
    """The forkserver survives a parent main module it cannot import: workers still
    start, and each one runs into the module's error itself, as without the adoption."""
    (tmp_path / "failing_main.py").write_text(
        textwrap.dedent(
            """
            import os
            if os.environ.get("FAIL_OUTSIDE_PARENT") != str(os.getpid()):
                raise RuntimeError("this module only imports in its parent")
            if __name__ == "__main__":
                from killpoint.workers import processes
                ctx = processes.context()
                p = ctx.Process(target=os.getpid)
                p.start()
                p.join()
                processes.stop_forkserver()
                print("worker exit", p.exitcode)
            """
        )
    )
    # `python -m failing_main`, with the parent's pid set first; run from the module's
    # folder, so that the forkserver (which starts there) can import it too.
    script = (
        "import os, runpy, sys; os.environ['FAIL_OUTSIDE_PARENT'] = str(os.getpid()); "
        "sys.argv = ['failing_main']; "
        "runpy.run_module('failing_main', run_name='__main__', alter_sys=True)"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert 0 == out.returncode, out.stderr
    assert "worker exit 1" == out.stdout.strip()
    assert "this module only imports in its parent" in out.stderr


def test_a_python_m_parent_does_not_choose_the_main_module_of_its_descendants(
    tmp_path: Path,
) -> None:
    """The main module a parent hands its forkserver is for that forkserver alone: a
    process started further down (here `python -c`, which has no main module to hand
    on) starts a forkserver that leaves the parent's module alone."""
    (tmp_path / "parent_main.py").write_text(
        textwrap.dedent(
            """
            import os, subprocess, sys
            with open("count", "a") as f:
                f.write(f"{os.getpid()}\\n")
            CHILD = (
                "import os; from killpoint.workers import processes; "
                "p = processes.context().Process(target=os.getpid); p.start(); p.join(); "
                "processes.stop_forkserver()"
            )
            if __name__ == "__main__":
                from killpoint.workers import processes
                p = processes.context().Process(target=os.getpid)
                p.start()
                p.join()
                code = subprocess.run([sys.executable, "-c", CHILD]).returncode
                processes.stop_forkserver()
                sys.exit(code)
            """
        )
    )
    out = subprocess.run(
        [sys.executable, "-m", "parent_main"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert 0 == out.returncode, out.stderr
    # The parent and its forkserver; not the child's forkserver.
    assert 2 == len((tmp_path / "count").read_text().splitlines())


def test_a_worker_whose_log_is_full_still_says_why_it_failed(tmp_path: Path) -> None:
    """The worker's log is a full device (/dev/full: every write is ENOSPC) and its run
    fails: the worker still gives its error, naming the log's ENOSPC, instead of dying
    without a word (which the engine would take for the runtime's doing)."""
    if not os.access("/dev/full", os.W_OK):
        pytest.skip("no writable /dev/full")
    (tmp_path / "worker.log").symlink_to("/dev/full")
    failing = dataclasses.replace(
        spec(tmp_path), runtime="tests.harness.broken_adapters:NeverStarts"
    )
    worker = Worker(failing, [], time.monotonic())
    out = worker.join(time.monotonic() + 60)
    assert "error" == out.kind, out.detail
    assert "this driver cannot start a run" in out.detail
    assert "No space left on device" in out.detail
