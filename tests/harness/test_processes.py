"""Worker processes: started warm, killed for real, never outliving their engine."""

# ruff: noqa: SIM300
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import psutil
import pytest

from harness.processes import Worker
from harness.worker import WorkerSpec

REPO = Path(__file__).resolve().parents[2]

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
    copied into each worker); the runtime under test still runs with the collector on."""
    w = Worker(spec(tmp_path, scenario="tests.harness.scenarios_for_tests:COLLECTOR"), [], 0.0)
    out = w.join(time.monotonic() + 60)
    assert "done" == out.kind, out.detail
    assert "enabled=True frozen=True" == out.results[-1]["content"]


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


def test_a_worker_exits_when_its_engine_dies(tmp_path: Path) -> None:
    """An engine killed hard (no cleanup) leaves no worker behind: a worker parked at a
    gate sees its pipe close and exits."""
    script = textwrap.dedent(
        f"""
        import os, sys, time
        sys.path.insert(0, {str(REPO)!r})
        from harness.processes import Worker
        from tests.harness.test_processes import spec
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
    out = subprocess.run(
        [sys.executable, str(path)], cwd=REPO, capture_output=True, text=True, timeout=120
    )
    assert 0 == out.returncode, out.stderr
    pid = int(out.stdout.split()[0])
    try:
        worker = psutil.Process(pid)
    except psutil.NoSuchProcess:
        return  # already gone
    _, alive = psutil.wait_procs([worker], timeout=30)
    assert [] == alive


def test_a_parent_started_with_python_m_is_not_rerun_in_each_worker(tmp_path: Path) -> None:
    """`python -m NAME` (the benchmarks, a user's script): the forkserver imports NAME
    once and adopts it, so workers do not execute the parent's main module again. It
    runs in the parent and once in the forkserver; three workers add nothing."""
    count = tmp_path / "count"
    out = subprocess.run(
        [sys.executable, "-m", "tests.harness.fixtures.counting_main"],
        cwd=REPO,
        env={**os.environ, "COUNT_FILE": str(count)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert 0 == out.returncode, out.stderr
    assert 2 == len(count.read_text().splitlines())


def test_main_module_name_is_the_name_given_to_python_m(tmp_path: Path) -> None:
    script = "import harness.processes as p; print(p.main_module_name())"
    (tmp_path / "named.py").write_text(script)
    by_name = subprocess.run(
        [sys.executable, "-m", "named"], cwd=tmp_path, capture_output=True, text=True
    )
    by_path = subprocess.run(
        [sys.executable, str(tmp_path / "named.py")], capture_output=True, text=True
    )
    assert ("named", "None") == (by_name.stdout.strip(), by_path.stdout.strip())


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
                from harness import processes
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
