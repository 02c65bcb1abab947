# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Random scenarios: hypothesis shapes and seeded shapes, run on the reference runtime."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, Phase, given, seed, settings

from killpoint import scenarios
from killpoint.scenarios import Conversation, Scenario
from killpoint.scenarios.strategies import (
    MAX_BATCH_SIZE,
    MAX_BATCHES,
    TOOL_NAMES,
    CallShape,
    ItemBroken,
    Shape,
    random_scenarios,
    scenario_from_seed,
    scenario_shapes,
    shape_from_seed,
    tool_output,
)

from .support import calls_of, run_scenario


def outcome_of(sc: Scenario, workdir: Path, mode: str) -> tuple[str, str | None, tuple[str, ...]]:
    out = run_scenario(sc, workdir, mode)
    return out.results[0].status, out.results[0].content, calls_of(out.runs[0])


@settings(
    max_examples=10,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(sc=random_scenarios(max_batches=4))
def test_random_scenarios_run_to_their_expected_end(sc: Scenario) -> None:
    """Each generated scenario completes on the reference runtime ("tool" mode) with the
    content and calls its Expected derives from the shape."""
    with tempfile.TemporaryDirectory() as tmp:
        actual = outcome_of(sc, Path(tmp), "tool")
    e = sc.expected[0]
    assert (e.status, e.content, e.calls) == actual


@pytest.mark.parametrize("value", [0, 1, 2])
@pytest.mark.parametrize("mode", ["runs", "tool-batch", "tool"])
def test_seeded_scenarios_run_in_every_mode(value: int, mode: str, tmp_path: Path) -> None:
    """scenario_from_seed(n) completes as expected in each checkpoint mode."""
    sc = scenario_from_seed(value)
    e = sc.expected[0]
    assert (e.status, e.content, e.calls) == outcome_of(sc, tmp_path, mode)


def test_the_same_seed_gives_the_same_scenario() -> None:
    """Two builds from one seed agree on name, shape, expectation and every reply."""
    a, b = scenario_from_seed(1234), scenario_from_seed(1234)
    assert (a.name, a.description, a.expected) == (b.name, b.description, b.expected)
    assert shape_from_seed(1234) == shape_from_seed(1234)
    conv = Conversation.from_input([{"role": "user", "content": a.inputs[0]}])
    assert a.script(conv) == b.script(conv)
    assert a.expected == scenarios.get("random-1234").expected


def test_different_seeds_give_varied_shapes_within_bounds() -> None:
    """Over 200 seeds: many distinct shapes, batch counts 1..6 and sizes 1..4 all used,
    every tool appears, and some calls fail."""
    shapes = [shape_from_seed(s) for s in range(200)]
    counts = {len(s.batches) for s in shapes}
    sizes = {len(b) for s in shapes for b in s.batches}
    tools = {c.tool for s in shapes for b in s.batches for c in b}
    failing = sum(c.fails for s in shapes for b in s.batches for c in b)
    expected = (
        set(range(1, MAX_BATCHES + 1)),
        set(range(1, MAX_BATCH_SIZE + 1)),
        set(TOOL_NAMES),
        True,
        True,
    )
    actual = (counts, sizes, tools, failing > 0, len({s.key for s in shapes}) > 150)
    assert expected == actual


def test_the_strategy_is_deterministic_for_a_given_seed() -> None:
    """Hypothesis with @seed draws the same shapes in the same order, run after run."""

    def draw() -> list[Shape]:
        drawn: list[Shape] = []

        @seed(20261130)
        @settings(max_examples=15, database=None, phases=[Phase.generate], deadline=None)
        @given(shape=scenario_shapes())
        def collect(shape: Shape) -> None:
            drawn.append(shape)

        collect()
        return drawn

    first, second = draw(), draw()
    assert first == second
    assert 15 == len(first)


def test_the_script_is_a_pure_function_of_the_conversation() -> None:
    """The same conversation twice, even after other conversations, gives the same reply."""
    sc = scenario_from_seed(7)
    start = Conversation.from_input([{"role": "user", "content": sc.inputs[0]}])
    first = sc.script(start)
    sc.script(Conversation.from_input([{"role": "user", "content": "something else"}]))
    assert first == sc.script(start)


def test_failing_calls_raise_and_others_answer() -> None:
    """ "bad-…" items raise ItemBroken; others answer a stable value."""
    with pytest.raises(ItemBroken):
        tool_output("lookup", "bad-1-1")
    assert tool_output("lookup", "ok-1-1") == tool_output("lookup", "ok-1-1")


def test_shapes_reject_empty_batches_and_unknown_tools() -> None:
    """A shape needs a non-empty batch; a call needs a known tool."""
    with pytest.raises(ValueError, match="non-empty"):
        Shape(((),))
    with pytest.raises(ValueError, match="unknown"):
        CallShape("rm_rf")
