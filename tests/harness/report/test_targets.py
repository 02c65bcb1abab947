"""Report targets: written in place when they are not regular files, never replaced, locked
against a second campaign, and a fallback when the write fails."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from killpoint.errors import TargetError
from killpoint.report.document import write
from killpoint.report.targets import Target, fallback_path

REPO = Path(__file__).resolve().parents[3]


def test_a_fifo_is_written_in_place(tmp_path: Path) -> None:
    fifo = tmp_path / "out"
    os.mkfifo(fifo)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text()))
    reader.start()
    target = Target(fifo)
    target.check()
    target.write("the report\n")
    reader.join(30)
    assert ["the report\n"] == got
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_character_device_is_never_replaced() -> None:
    target = Target(Path("/dev/null"))
    target.check()
    target.write("x" * 1000)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_a_symlink_stays_a_link_and_its_target_is_written(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    target = Target(link)
    target.check()
    target.write("new")
    assert link.is_symlink()
    assert "new" == real.read_text()


def test_a_folder_is_refused(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match="is a folder"):
        Target(tmp_path).check()


def test_a_path_below_a_file_is_refused_naming_the_file(tmp_path: Path) -> None:
    (tmp_path / "notes").write_text("a file")
    for path in (tmp_path / "notes" / "r.xml", tmp_path / "notes" / "deeper" / "r.xml"):
        with pytest.raises(TargetError, match=r"'.*notes' is a file, not a folder"):
            Target(path).check()
    assert "a file" == (tmp_path / "notes").read_text()


def test_a_second_campaign_on_the_same_report_is_refused(tmp_path: Path) -> None:
    first, second = Target(tmp_path / "m.json"), Target(tmp_path / "m.json")
    first.check()
    first.lock()
    try:
        second.check()
        with pytest.raises(
            TargetError, match=f"another killpoint campaign \\(pid {os.getpid()}\\)"
        ):
            second.lock()
    finally:
        first.close()
    second.lock()  # free again once the first is done
    second.close()


def test_a_failed_write_goes_to_the_fallback(tmp_path: Path) -> None:
    if not os.access("/dev/full", os.W_OK):
        pytest.skip("no writable /dev/full")
    target = Target(Path("/dev/full"))
    target.check()
    fallback = write(target, '{"cells": []}')
    try:
        assert fallback == fallback_path(Path("/dev/full"))
        assert '{"cells": []}' == fallback.read_text()  # type: ignore[union-attr]
    finally:
        if fallback is not None:
            fallback.unlink()


def killpoint(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["matrix", "--json", "same", "--report", "same"], "--json and --report both name"),
        (["report", "r.json", "-o", "r.json"], "is the report's own JSON"),
        (["report", "notes.json"], "is not a killpoint matrix report"),
        (["report", "empty.json"], "is not a killpoint matrix report"),
        (["report", "broken.json"], "is not JSON"),
        (["replay", "reference/research/tool-batch/sqlite/after-checkpoint:1", "--json",
          "notes.json"], "is not a killpoint matrix report"),
    ],
)  # fmt: skip
def test_refused_with_one_line_and_exit_2(tmp_path: Path, args: list[str], named: str) -> None:
    (tmp_path / "r.json").write_text(json.dumps({"schema": "killpoint.matrix/2", "cells": []}))
    (tmp_path / "notes.json").write_text(json.dumps({"notes": [1, 2]}))
    (tmp_path / "empty.json").write_text("{}")
    (tmp_path / "broken.json").write_text("{")
    before = (tmp_path / "r.json").read_text()
    result = killpoint(*args, cwd=tmp_path)
    assert 2 == result.returncode, result.stderr
    assert named in result.stderr
    assert 1 == len(result.stderr.strip().splitlines()), result.stderr
    assert before == (tmp_path / "r.json").read_text()
    assert not (tmp_path / "same").exists()


# Each process takes the lock on one report path; a line on stdin moves it on, and it
# says on stdout what happened. B's flock first waits for a line: it has opened the lock
# file, and locks it only when the test says (after A has let go).
RACER = """
import fcntl, sys
from pathlib import Path
from killpoint.report.targets import Target, TargetError
if sys.argv[2] == "paused":
    real = fcntl.flock
    def paused(fd, op):
        fcntl.flock = real
        print("opened", flush=True)
        sys.stdin.readline()
        return real(fd, op)
    fcntl.flock = paused
target = Target(Path(sys.argv[1]))
target.check()
try:
    target.lock()
except TargetError as exc:
    print("refused", exc, flush=True)
    sys.exit(0)
print("held", flush=True)
sys.stdin.readline()
target.close()
print("closed", flush=True)
"""


def racer(path: Path, how: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", RACER, str(path), how], cwd=REPO, text=True,
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
    )  # fmt: skip


def test_a_lock_let_go_while_another_campaign_opened_it_is_not_held_twice(
    tmp_path: Path,
) -> None:
    """A holds the lock; B opens the lock file; A unlinks it and lets go; B then locks the
    file no path names. C must still be refused: B saw the path no longer names what it
    locked and took the path's own file."""
    report = tmp_path / "m.json"
    a = racer(report, "plain")
    b = racer(report, "paused")
    c = None
    try:
        assert a.stdin and a.stdout and b.stdin and b.stdout
        assert "held" == a.stdout.readline().strip()
        assert "opened" == b.stdout.readline().strip()  # B has A's file open, unlocked
        a.stdin.write("\n")
        a.stdin.flush()
        assert "closed" == a.stdout.readline().strip()  # unlinked while held, let go
        b.stdin.write("\n")
        b.stdin.flush()
        assert "held" == b.stdout.readline().strip()
        c = racer(report, "plain")
        out, _ = c.communicate(timeout=120)
        assert out.startswith("refused another killpoint campaign (pid "), out
        assert f"pid {b.pid}" in out
    finally:
        for proc in (a, b, c):
            if proc is not None:
                proc.kill()
                proc.wait()
