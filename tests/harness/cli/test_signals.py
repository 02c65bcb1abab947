"""How `killpoint matrix` ends when it is told to stop, or killed: real signals to a real
process, and nothing it started may outlive it."""

# ruff: noqa: SIM300
from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from killpoint.report.journal import journal_path
from tests.harness.ticking_campaign import TickingCampaign, cell_lines, ctrl_c_default

REPO = Path(__file__).resolve().parents[3]

pytestmark = pytest.mark.slow


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A TMPDIR of the campaign's own (short: the forkserver's socket lives there), to see
    that no killpoint-* or pymp-* folder is left in it."""
    folder = Path(tempfile.mkdtemp(prefix="kps-", dir="/tmp"))
    try:
        yield folder
    finally:
        subprocess.run(["rm", "-rf", str(folder)], check=False)


def campaign(tmp: Path, temp: Path, *extra: str) -> TickingCampaign:
    """In a session of its own, as a shell with job control starts it, with its own TMPDIR."""
    return TickingCampaign(
        tmp, "--timeout", "60", *extra, env={"TMPDIR": str(temp)}, new_session=True
    )


def assert_gone(family: list[psutil.Process]) -> None:
    _, alive = psutil.wait_procs(family, timeout=30)
    assert [] == [(p.pid, p.status()) for p in alive if p.is_running()]


@pytest.mark.parametrize(
    ("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129), (signal.SIGINT, 130)]
)
def test_a_stopped_campaign_writes_what_finished_and_leaves_nothing(
    tmp_path: Path, short_tmp: Path, signum: int, status: int
) -> None:
    """SIGTERM (a cancelled CI job), SIGHUP (a closed terminal), Ctrl-C (SIGINT to the
    whole process group, as a terminal sends it): the status is 128 + the signal, the JSON
    holds the cells that finished, no killpoint-* or pymp-* folder is left, every kept
    folder is named in the JSON, no traceback, and no process of the campaign is left."""
    run = campaign(tmp_path, short_tmp, "--points", "all", "--keep", "failed")
    run.ticks(2 * 3 + 10)
    run.finished(1)
    family = run.family()
    if signum == signal.SIGINT:
        os.killpg(run.proc.pid, signum)
    else:
        run.proc.send_signal(signum)
    _, err = run.finish()
    assert status == run.proc.returncode, err
    assert "Traceback" not in err, err
    document = json.loads(run.json.read_text())
    assert document["interrupted"] is True
    assert 0 < len(document["cells"]) < document["summary"]["planned"]
    kept = {c["kept"] for c in document["cells"] if c.get("kept")}
    left = [
        p for p in short_tmp.rglob("*") if p.parent == short_tmp or p.parent.parent == short_tmp
    ]
    # Everything under a folder nobody names, and the cells the JSON holds: what a
    # failure needs to be read.
    unnamed = [str(p) for p in short_tmp.rglob("*") if not any(str(p).startswith(k) for k in kept)]
    cells = [(c["id"], c["verdict"]) for c in document["cells"]]
    for path in left:
        assert str(path) in kept or any(k.startswith(str(path)) for k in kept), (unnamed, cells)
    assert not [p for p in short_tmp.iterdir() if p.name.startswith("pymp-")]
    assert_gone(family)


def test_no_queued_cell_starts_after_an_interrupt(tmp_path: Path, short_tmp: Path) -> None:
    """With every cell's folder kept, the folders made are the cells that finished plus
    at most the ones in flight (two workers): nothing queued started after Ctrl-C, and
    the cells cut short left no folder."""
    work = tmp_path / "work"
    run = campaign(tmp_path, short_tmp, "--points", "all", "--keep", "all", "--work-dir", str(work))
    run.ticks(2 * 3 + 6)
    os.killpg(run.proc.pid, signal.SIGINT)
    _, err = run.finish()
    assert 130 == run.proc.returncode, err
    cells = json.loads(run.json.read_text())["cells"]
    folders = [p for p in work.glob("*/*") if "baseline" not in p.name]
    assert sorted(str(p) for p in folders) == sorted(c["kept"] for c in cells)


def test_an_interrupted_report_keeps_its_plan_and_draws_what_did_not_run(
    tmp_path: Path, short_tmp: Path
) -> None:
    """Ctrl-C mid-campaign: the JSON keeps every planned cell (those that ran among them),
    and the terminal's "not run" line and the report's hatched cells count the rest."""
    run = campaign(tmp_path, short_tmp, "--points", "all")
    run.ticks(2 * 3 + 10)
    run.finished(1)
    os.killpg(run.proc.pid, signal.SIGINT)
    out, err = run.finish()
    assert 130 == run.proc.returncode, err
    document = json.loads(run.json.read_text())
    (row,) = document["planned_cells"]
    planned = row["schedules"]
    assert len(planned) == document["summary"]["planned"]
    ran = ["+".join(c["schedule"]) for c in document["cells"]]
    assert set(ran) <= set(planned) and 0 < len(ran) < len(planned)
    left = len(planned) - len(ran)
    cells = "cell" if left == 1 else "cells"
    assert f"not run: {left} planned {cells} (the campaign was interrupted)" in out, out
    html = run.html.read_text()
    assert html.count('<td class="nr') == left
    assert f"{left} planned {cells} did not run" in html


def test_ctrl_c_during_the_baselines_draws_the_rows_never_started(
    tmp_path: Path, short_tmp: Path
) -> None:
    """Stopped in the first baseline, before any cell was planned: the rows are in the
    JSON's plan with no cells, in the terminal's table and in the report, never left out.
    Every worker is held in its first tool call, so no baseline can end before Ctrl-C."""
    run = TickingCampaign(
        tmp_path,
        *("--timeout", "60", "--points", "all", "--modes", "tool,tool-batch"),
        env={"TMPDIR": str(short_tmp), "KILLPOINT_TEST_HOLD": "1"},
        new_session=True,
    )
    run.ticks(1)
    os.killpg(run.proc.pid, signal.SIGINT)
    out, err = run.finish()
    assert 130 == run.proc.returncode, err
    assert "Traceback" not in err, err
    document = json.loads(run.json.read_text())
    assert [] == document["cells"]
    assert [("tool", None), ("tool-batch", None)] == [
        (r["mode"], r["schedules"]) for r in document["planned_cells"]
    ]
    assert "not run: 2 rows whose cells were never planned (the campaign was interrupted)" in out
    assert "whole row" in out
    html = run.html.read_text()
    assert 2 == html.count("not run: the campaign stopped before this row")
    assert "every verdict expected" not in html


def with_a_paused_worker(tmp: Path, temp: Path) -> TickingCampaign:
    """A campaign of sigstop cells, once one of them has paused its first worker."""
    run = campaign(tmp, temp, "--points", "sigstop")
    run.ticks(2 * 3 + 1)
    paused: list[psutil.Process] = []
    while not paused:  # a sigstop cell pauses its first worker: wait for that state
        ready, _, _ = select.select([run.fd], [], [], 0.05)
        if ready:
            os.read(run.fd, 4096)
        paused = [p for p in run.family() if p.status() == psutil.STATUS_STOPPED]
        assert run.proc.poll() is None, "the campaign ended before a worker was paused"
    return run


def test_sigkill_of_the_command_leaves_no_forkserver_nor_worker(
    tmp_path: Path, short_tmp: Path
) -> None:
    """SIGKILL gives the command no chance to clean up: its forkserver sees its parent
    gone and kills every worker it forked, a paused (SIGSTOPped) one included."""
    run = with_a_paused_worker(tmp_path, short_tmp)
    family = run.family()
    forkserver = [
        p for p in family if p.ppid() == run.proc.pid and "forkserver" in " ".join(p.cmdline())
    ]
    assert forkserver
    run.proc.send_signal(signal.SIGKILL)
    run.finish()
    assert_gone(family)


def test_ctrl_c_during_start_up_exits_130_quietly(tmp_path: Path, short_tmp: Path) -> None:
    """Ctrl-C while the user's runtime module is being imported (before any cell): exit
    130, no traceback, nothing written."""
    fifo = tmp_path / "importing"
    os.mkfifo(fifo)
    (tmp_path / "slow_runtime.py").write_text(
        "import os, threading\n"
        "with open(os.environ['KILLPOINT_TEST_FIFO'], 'w') as f:\n"
        "    f.write('importing\\n')\n"
        "threading.Event().wait()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-m", "killpoint.cli.main", "matrix", "--runtime", "slow_runtime:adapter",
         "--json", str(tmp_path / "m.json"), "--report", str(tmp_path / "m.html")],
        cwd=tmp_path, env={**os.environ, "KILLPOINT_TEST_FIFO": str(fifo), "TMPDIR": str(short_tmp),
                           "PYTHONPATH": str(REPO)},
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
        preexec_fn=ctrl_c_default,
    )  # fmt: skip
    try:
        with open(fifo) as f:
            assert "importing\n" == f.readline()
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert 130 == proc.returncode, err
    assert "" == err.strip()
    assert not (tmp_path / "m.json").exists()


def test_two_ctrl_c_in_a_row_still_write_what_finished(tmp_path: Path, short_tmp: Path) -> None:
    """A second Ctrl-C 0.05 s after the first (an impatient user) gives up the cells in
    flight, never the ones that finished: the JSON and the HTML hold them, marked
    interrupted, and the journal is gone (the reports hold all it did)."""
    run = campaign(tmp_path, short_tmp, "--points", "all")
    run.ticks(2 * 3 + 10)
    run.finished(1)
    os.killpg(run.proc.pid, signal.SIGINT)
    time.sleep(0.05)  # the probe's own rhythm between two key presses, not a wait
    os.killpg(run.proc.pid, signal.SIGINT)
    _, err = run.finish()
    assert 130 == run.proc.returncode, err
    assert "Traceback" not in err, err
    document = json.loads(run.json.read_text())
    assert document["interrupted"] is True
    assert 0 < len(document["cells"]) < document["summary"]["planned"]
    assert run.html.read_text().rstrip().endswith("</html>")
    assert not journal_path(run.json).exists()


def json_through_a_fifo(
    tmp: Path,
    start: Callable[[], TickingCampaign],
    interrupt: Callable[[TickingCampaign], None],
) -> tuple[TickingCampaign, bytes]:
    """The campaign `start` starts, its JSON going to a FIFO whose buffer is one page, so
    that its writer is caught in the middle of the JSON: `interrupt` is called then, once.
    The campaign and the JSON it wrote."""
    os.mkfifo(tmp / "m.json")
    reader = os.open(tmp / "m.json", os.O_RDONLY | os.O_NONBLOCK)
    try:
        fcntl.fcntl(reader, fcntl.F_SETPIPE_SZ, 4096)
        run = start()
        chunks: list[bytes] = []
        while True:
            ready, _, _ = select.select([reader], [], [], 120)
            assert ready, "the JSON was never written"
            try:
                chunk = os.read(reader, 65536)
            except BlockingIOError:
                continue
            if not chunk:
                if chunks:
                    break  # the writer closed the FIFO: the JSON is complete
                assert run.proc.poll() is None, "the campaign ended before writing the JSON"
                continue  # no writer yet
            if not chunks:
                # The JSON is longer than the FIFO holds: its writer is still in it.
                interrupt(run)
            chunks.append(chunk)
    finally:
        os.close(reader)
    return run, b"".join(chunks)


def test_sigterm_while_the_reports_are_written_leaves_them_whole(
    tmp_path: Path, short_tmp: Path
) -> None:
    """The JSON goes to a FIFO whose buffer is one page, so that its writer is caught in
    the middle of the JSON: SIGTERM then is held until both reports are written whole,
    and the status still says SIGTERM."""
    run, written = json_through_a_fifo(
        tmp_path,
        lambda: campaign(tmp_path, short_tmp, "--points", "boundaries"),
        lambda run: run.proc.send_signal(signal.SIGTERM),
    )
    _, err = run.finish()
    assert 143 == run.proc.returncode, err
    document = json.loads(written)
    assert len(document["cells"]) == document["summary"]["planned"] > 0
    assert len(written) > 4096
    assert run.html.read_text().rstrip().endswith("</html>")
    assert "SIGTERM came while the reports were written" in err


def test_sigkill_of_the_whole_group_leaves_no_paused_worker(
    tmp_path: Path, short_tmp: Path
) -> None:
    """SIGKILL to the command's process group (a CI runner's or an OOM killer's end):
    the forkserver dies with the command, its watch never runs, and a paused worker,
    in a session of its own, cannot notice anything while stopped. The kernel ends it:
    each worker asked to be killed when its forkserver dies."""
    run = with_a_paused_worker(tmp_path, short_tmp)
    family = run.family()
    os.killpg(run.proc.pid, signal.SIGKILL)
    run.finish()
    assert_gone(family)


def ignoring_ctrl_c(tmp: Path, temp: Path, *extra: str, hold: bool = False) -> TickingCampaign:
    """Started with SIGINT ignored, as a script's `killpoint matrix ... &` is: `hold`, every
    worker held in its first tool call (no baseline ends)."""
    return TickingCampaign(
        tmp,
        *("--timeout", "60", *extra),
        env={"TMPDIR": str(temp), **({"KILLPOINT_TEST_HOLD": "1"} if hold else {})},
        new_session=True,
        ignored=(signal.SIGINT,),
    )


@pytest.mark.parametrize("when", ["baselines", "cells"])
def test_a_ctrl_c_ignored_from_the_start_stops_no_part_of_the_campaign(
    tmp_path: Path, short_tmp: Path, when: str
) -> None:
    """A shell ignores SIGINT in its background jobs on purpose: a process-group SIGINT,
    during the baselines or among the cells, stops nothing (cells go on finishing), and
    SIGTERM still ends the campaign cleanly with 143. A SIGINT taken would have been
    handled first (the lower signal) and made it 130."""
    run = ignoring_ctrl_c(tmp_path, short_tmp, "--points", "all", hold=when == "baselines")
    journal = journal_path(run.json)
    if when == "baselines":
        run.ticks(1)
    else:
        run.ticks(2 * 3 + 10)
        run.finished(1)
    before = len(cell_lines(journal))
    os.killpg(run.proc.pid, signal.SIGINT)
    if when == "cells":
        run.finished(before + 3)  # it goes on
    assert run.proc.poll() is None
    family = run.family()
    run.proc.send_signal(signal.SIGTERM)
    _, err = run.finish()
    assert 143 == run.proc.returncode, err
    assert "Traceback" not in err, err
    assert "SIGINT" not in err, err
    document = json.loads(run.json.read_text())
    assert document["interrupted"] is True
    if when == "cells":
        assert before + 3 <= len(document["cells"]) < document["summary"]["planned"]
    else:
        assert [] == document["cells"]
    assert_gone(family)


def test_a_ctrl_c_ignored_from_the_start_is_ignored_while_the_reports_are_written(
    tmp_path: Path, short_tmp: Path
) -> None:
    """The same SIGINT while the reports are written (the JSON goes to a FIFO of one page,
    so that its writer is caught in the middle of it): ignored there too, where the hold on
    signals took it over and ended the campaign with 130."""
    run, written = json_through_a_fifo(
        tmp_path,
        lambda: ignoring_ctrl_c(tmp_path, short_tmp, "--points", "boundaries"),
        lambda run: os.killpg(run.proc.pid, signal.SIGINT),
    )
    _, err = run.finish()
    assert 0 == run.proc.returncode, err
    assert "SIGINT" not in err, err
    document = json.loads(written)
    assert len(document["cells"]) == document["summary"]["planned"] > 0
    assert len(written) > 4096
    assert run.html.read_text().rstrip().endswith("</html>")


def test_a_sighup_ignored_from_the_start_stops_nothing(tmp_path: Path, short_tmp: Path) -> None:
    """`nohup killpoint matrix ...`: SIGHUP ignored on purpose, so a closed terminal leaves
    the campaign running; killpoint's own handler (SIGHUP ends a campaign as a Ctrl-C does)
    must not take that back. Cells go on finishing; SIGTERM still ends it with 143."""
    run = TickingCampaign(
        tmp_path, "--timeout", "60", "--points", "all", env={"TMPDIR": str(short_tmp)},
        new_session=True, ignored=(signal.SIGHUP,),
    )  # fmt: skip
    run.ticks(2 * 3 + 10)
    run.finished(1)
    before = len(cell_lines(journal_path(run.json)))
    run.proc.send_signal(signal.SIGHUP)
    run.finished(before + 3)  # it goes on
    assert run.proc.poll() is None
    run.proc.send_signal(signal.SIGTERM)
    _, err = run.finish()
    assert 143 == run.proc.returncode, err
    assert "SIGHUP" not in err, err
