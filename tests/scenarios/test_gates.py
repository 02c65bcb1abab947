# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Gates: an armed point announces itself on a pipe and blocks until released."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from killpoint.runtime import Store
from killpoint.scenarios import Ledger, ToolEnv, gates
from killpoint.scenarios.builtin import research

from .support import Outcome, read_line, run_scenario


def test_a_tool_gate_announces_and_blocks_until_released(tmp_path: Path) -> None:
    """A thread calling a tool armed at "started" announces the gate's name on the pipe and
    stays blocked (no ledger record yet: the gate comes before the effect) until one byte
    is written to the release pipe; then the call completes."""
    ann_r, ann_w = os.pipe()
    rel_r, rel_w = os.pipe()
    ledger = Ledger(tmp_path / "l.jsonl", "gates")

    def fetch_detail(result_id: str) -> str:
        return f"text of {result_id}"

    tool = ToolEnv(ledger).wrap(fetch_detail)
    name = gates.tool_gate("fetch_detail", {"result_id": "r2"}, "started")
    gates.arm([name], announce_fd=ann_w, release_fd=rel_r)
    results: list[str] = []
    worker = threading.Thread(target=lambda: results.append(tool(result_id="r2")), daemon=True)
    worker.start()
    try:
        announced = read_line(ann_r)
        blocked = (worker.is_alive(), list(results), ledger.entries())
    finally:
        os.write(rel_w, b"x")
        worker.join(timeout=30)
        gates.disarm()
    assert (name, (True, [], [])) == (announced, blocked)
    assert (["text of r2"], ["started", "finished"]) == (
        results,
        [e.phase for e in ledger.entries()],
    )
    for fd in (ann_r, ann_w, rel_r, rel_w):
        os.close(fd)


def test_a_model_gate_holds_the_run_where_the_store_can_be_inspected(tmp_path: Path) -> None:
    """Armed at model turn 3, a research run (tool-batch mode) stops with two batches
    executed and checkpointed (5 messages, RUNNING), then finishes once released."""
    ann_r, ann_w = os.pipe()
    rel_r, rel_w = os.pipe()
    gates.arm([gates.model_gate(3)], announce_fd=ann_w, release_fd=rel_r)
    outcome: list[Outcome] = []
    worker = threading.Thread(
        target=lambda: outcome.append(run_scenario(research.SCENARIO, tmp_path, "tool-batch")),
        daemon=True,
    )
    worker.start()
    try:
        announced = read_line(ann_r)
        stored = Store(f"sqlite:///{tmp_path / 'store.db'}").read_run("s1-run1")
        ledger = [e.tool for e in Ledger(tmp_path / "ledger.jsonl", "research").entries()]
    finally:
        os.write(rel_w, b"x")
        worker.join(timeout=60)
        gates.disarm()
    assert stored is not None
    expected = ("model:3:received", "RUNNING", 5, ["search"] * 2 + ["fetch_detail"] * 2)
    assert expected == (announced, stored.status.value, len(stored.messages), ledger)
    assert "COMPLETED" == outcome[0].results[0].status
    for fd in (ann_r, ann_w, rel_r, rel_w):
        os.close(fd)


def test_unarmed_gates_do_nothing() -> None:
    """With nothing armed, hit() returns at once and records nothing."""
    gates.disarm()
    gates.hit(gates.model_gate(1))
    gates.hit(gates.tool_gate("t", {}, "started"))
    assert (frozenset(), []) == (gates.armed(), gates.hits())


def test_gate_names_use_the_canonical_arguments() -> None:
    """A tool gate names the call by its canonical arguments: key order does not matter."""
    a = gates.tool_gate("f", {"a": 1, "b": 2}, "started")
    b = gates.tool_gate("f", '{"b": 2, "a": 1}', "started")
    assert (a, "model:4:received") == (b, gates.model_gate(4))
    assert a.startswith("tool:f:") and a.endswith(":started")


class TestNames:
    """Gate names are built and parsed here only; every form round-trips."""

    def test_every_form_parses_back_to_its_parts(self) -> None:
        tool = gates.tool_gate("fetch_detail", {"result_id": "r2"}, "finished")
        cases = {
            gates.run_gate(2, "resume"): ("run", "resume", 2, None),
            gates.model_gate(3): ("model", "received", 3, None),
            gates.checkpoint_gate(4, "committing"): ("checkpoint", "committing", 4, None),
            tool: ("tool", "finished", None, "fetch_detail"),
        }
        for name, (kind, phase, number, tool_name) in cases.items():
            parsed = gates.parse(name)
            assert parsed is not None, name
            assert (kind, phase, number, tool_name, 1, name) == (
                parsed.kind, parsed.phase, parsed.number, parsed.tool, parsed.occurrence,
                parsed.base,
            )  # fmt: skip

    def test_an_occurrence_suffix_is_counted_and_left_out_of_the_base(self) -> None:
        parsed = gates.parse("model:3:received#2")
        assert parsed is not None
        assert (2, "model:3:received") == (parsed.occurrence, parsed.base)
        assert "model:3:received" == gates.base_name("model:3:received#2")

    def test_what_is_not_a_gate_parses_to_none(self) -> None:
        for name in ("checkpoint:1:nope", "run:x:start", "tool:a:b:c", "model:1", ""):
            assert gates.parse(name) is None, name

    def test_a_phase_that_does_not_exist_cannot_be_built(self) -> None:
        with pytest.raises(ValueError, match="checkpoint phase"):
            gates.checkpoint_gate(1, "landing")
        with pytest.raises(ValueError, match="run phase"):
            gates.run_gate(1, "restart")
