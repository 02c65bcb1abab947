# ruff: noqa: SIM300 - tests assert `expected == actual`
"""mid-stream:K: a real worker is killed while model turn K's reply streams to it (half of
its chunks read), and a fresh worker resumes the run to the baseline's end. Driven through
clients runtimes really use (tests/harness/chat_runtime.py): the openai SDK's streamed
Chat Completions and Responses API through the HTTP mock in the worker, LiteLLM and the
anthropic SDK's stream at the local address."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from killpoint import kinds
from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig
from killpoint.errors import PointError
from killpoint.judge.baseline import Baseline
from killpoint.kinds.kills import MidStream, stream_chunks
from killpoint.scenarios import gates
from killpoint.scenarios.model import SERVED_LOG, requests_seen, turn_log
from killpoint.values.cell import Cell
from killpoint.values.points import CrashPoint
from killpoint.workers.worker import MODEL_STATE

ROW = ("research", "every-batch", "sqlite")
# A limit, not a measure: a forkserver that imports LiteLLM (seconds) on a loaded machine.
TIMEOUT = 120.0
RUNTIMES = {
    # runtime -> (the format its requests speak, how they reached the scripted model)
    "openai_stream": ("chat-completions", "mock"),
    "litellm_stream": ("chat-completions", "local"),
    "anthropic_stream": ("anthropic-messages", "mock"),
    "responses_stream": ("responses", "mock"),
}


def _client(name: str) -> str:
    return f"tests.harness.chat_runtime:{name}"


@pytest.mark.slow
@pytest.mark.parametrize("name", list(RUNTIMES))
def test_a_kill_mid_stream_resumes_to_the_baseline(name: str, tmp_path: Path) -> None:
    if "litellm" in name:
        pytest.importorskip("litellm")
    if "anthropic" in name:
        pytest.importorskip("anthropic")
    engine = Engine(EngineConfig(work_root=tmp_path, keep="all", timeout=TIMEOUT))
    row = (_client(name), *ROW)
    base = engine.baseline(row)
    assert base.problem is None, base.problem
    points = kinds.points_of(base, ["mid-stream"])
    # Every turn of this runtime streams, so every turn offers its point.
    assert [CrashPoint("mid-stream", t) for t in base.turns] == points
    result = engine.run_cell(Cell(*row, schedule=(CrashPoint("mid-stream", 2),)))
    assert (result.verdict, result.expected) == ("ok", True), result.detail
    texts = [event[1] for event in result.timeline]
    held = next(t for t in texts if t.startswith("gate model:2:chunk:"))
    sent = int(held.rsplit(":", 1)[1]) - 1
    # Killed with part of the reply read: neither before it began nor after it ended.
    assert 0 < sent < stream_chunks(base, 2), texts
    assert "worker killed (exit -9)" in texts
    state = Path(result.kept or "") / MODEL_STATE
    served = turn_log(state, SERVED_LOG)
    killed, resumer = (int(re.search(r"pid (\d+)", t)[1]) for t in texts if "started (pid" in t)  # type: ignore[index]
    # Turn 2 was served to the worker that was killed reading it, then asked again.
    assert [(2, killed), (2, resumer)] == [entry for entry in served if entry[0] == 2]
    wire, via = RUNTIMES[name]
    assert {(wire, True, via)} == {
        (r["format"], r["stream"], r["via"]) for r in requests_seen(state)
    }
    engine.sweep()


def _baseline(trace: list[str]) -> Baseline:
    base = Baseline("r", "s", "m", "sqlite", trace=trace)
    base.analyse()
    return base


def test_only_turns_that_streamed_offer_a_point_and_it_stands_half_way() -> None:
    trace = [
        gates.run_gate(1, "start"),
        gates.model_gate(1),  # not streamed
        gates.checkpoint_gate(1, "landed"),
        gates.model_gate(2),
        gates.chunk_gate(2, 1),
        gates.chunk_gate(2, 9),
    ]
    base = _baseline(trace)
    assert [CrashPoint("mid-stream", 2)] == MidStream().points(base)
    plan = MidStream().plan(base, CrashPoint("mid-stream", 2))
    # Nine chunks: held before the fifth, four read; one checkpoint in the store.
    assert ((gates.chunk_gate(2, 5),), 1) == (plan.arm, plan.checkpoints)
    with pytest.raises(PointError, match="did not stream"):
        MidStream().plan(base, CrashPoint("mid-stream", 1))


def test_a_runtime_that_never_streams_offers_no_mid_stream_point() -> None:
    base = _baseline([gates.run_gate(1, "start"), gates.model_gate(1), gates.model_gate(2)])
    assert [] == MidStream().points(base)
