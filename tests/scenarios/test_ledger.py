# ruff: noqa: SIM300 - tests assert `expected == actual`
"""The ledger: JSON lines written through to the kernel, that survive a SIGKILL and tolerate a torn line."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

from killpoint.scenarios import Ledger
from killpoint.scenarios.gates import tool_gate

from .support import read_line

CHILD = textwrap.dedent(
    """
    import os, sys
    from killpoint.scenarios import Ledger, ToolEnv, gates

    gates.arm_from_env()
    ledger = Ledger(sys.argv[1], "kill")
    for i in range(3):
        ledger.record("write", {"i": i}, phase="started", key=f"k{i}")
    # A record torn by a crash: no newline; the next record lands on the same line.
    fd = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND)
    os.write(fd, b'{"scenario": "kill", "tool": "tor')
    os.close(fd)

    def charge(amount: int) -> str:
        return "charged"

    ToolEnv(ledger).wrap(charge)(amount=5)  # blocks at the armed gate until killed
    print("the gate did not block", flush=True)
    """
)


def test_the_ledger_survives_a_sigkill_of_its_writer(tmp_path: Path) -> None:
    """A child writes records, a torn fragment, then a tool call that blocks at its
    "finished" gate; killed there with SIGKILL, every complete record is readable, the
    record appended to the torn line included, and nothing past the gate happened."""
    path = tmp_path / "ledger.jsonl"
    gate = tool_gate("charge", {"amount": 5}, "finished")
    read_fd, write_fd = os.pipe()
    env = {**os.environ, "KILLPOINT_GATES": gate, "KILLPOINT_GATE_FD": str(write_fd)}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(path)],
        env=env,
        pass_fds=[write_fd],
        stdout=subprocess.PIPE,
    )
    os.close(write_fd)
    try:
        assert gate == read_line(read_fd)
    finally:
        child.kill()  # SIGKILL
        child.wait()
        os.close(read_fd)
    assert -9 == child.returncode
    expected = [
        ("write", '{"i":0}', "k0", "started"),
        ("write", '{"i":1}', "k1", "started"),
        ("write", '{"i":2}', "k2", "started"),
        ("charge", '{"amount":5}', None, "started"),
        ("charge", '{"amount":5}', None, "finished"),
    ]
    entries = Ledger(path, "kill").entries()
    assert expected == [(e.tool, e.arguments, e.key, e.phase) for e in entries]
    assert {child.pid} == {e.pid for e in entries}
    assert b"" == (child.stdout.read() if child.stdout else b"")


def test_a_torn_last_line_is_ignored_and_the_next_writer_is_kept(tmp_path: Path) -> None:
    """A torn fragment at the end is skipped; a record later appended to it is read."""
    ledger = Ledger(tmp_path / "l.jsonl", "s")
    ledger.record("a", {}, phase="started")
    with open(ledger.path, "a") as f:
        f.write('{"scenario": "s", "tool": "b", "argu')
    assert ["a"] == [e.tool for e in ledger.entries()]
    ledger.record("c", {"x": 1}, phase="started", key="k")
    assert [("a", None), ("c", "k")] == [(e.tool, e.key) for e in ledger.entries()]


def test_has_effect_counts_only_started_effects(tmp_path: Path) -> None:
    """has_effect(key) is true once a started record with effect=True has that key."""
    ledger = Ledger(tmp_path / "l.jsonl", "s")
    before = ledger.has_effect("k")
    ledger.record("t", {}, phase="started", key="k", effect=False)
    noop = ledger.has_effect("k")
    ledger.record("t", {}, phase="started", key="k")
    assert (False, False, True) == (before, noop, ledger.has_effect("k"))


def test_a_missing_ledger_reads_empty(tmp_path: Path) -> None:
    """Before the first record, the ledger has no entries (and no file)."""
    ledger = Ledger(tmp_path / "none.jsonl", "s")
    assert ([], False) == (ledger.entries(), ledger.path.exists())
