"""Random scenarios: shapes (batches, batch sizes, tool mix, failing calls) drawn by
hypothesis or from a seed, turned into ordinary Scenarios.

A shape is plain data; the scenario's script closes over it and stays a pure function
of the conversation: model turn k (counted in the conversation) asks for batch k.
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

from .conversation import Conversation
from .scenario import Expected, Scenario
from .script import Reply, Script, ToolRequest
from .tooling import ToolEnv, idempotent

# lookup/compute: pure reads; record: a non-idempotent effect; record_once: @idempotent.
TOOL_NAMES: tuple[str, ...] = ("lookup", "compute", "record", "record_once")
MAX_BATCHES = 6
MAX_BATCH_SIZE = 4
FAIL_ONE_IN = 5  # scenario_from_seed: about one call in five fails


@dataclass(frozen=True)
class CallShape:
    """One call of a batch: which tool, and whether it raises."""

    tool: str
    fails: bool = False

    def __post_init__(self) -> None:
        if self.tool not in TOOL_NAMES:
            raise ValueError(
                f"scenarios: random tool {self.tool!r} is unknown; choose from {TOOL_NAMES}"
            )


@dataclass(frozen=True)
class Shape:
    """The batches the model asks for, in order; then a final message."""

    batches: tuple[tuple[CallShape, ...], ...]

    def __post_init__(self) -> None:
        if not self.batches or any(not b for b in self.batches):
            raise ValueError("scenarios: a random shape needs at least one non-empty batch")

    @property
    def key(self) -> str:
        """A short, stable digest of the shape."""
        text = ";".join(
            ",".join(f"{c.tool}{'!' if c.fails else ''}" for c in b) for b in self.batches
        )
        return hashlib.sha256(text.encode()).hexdigest()[:10]

    @property
    def calls(self) -> tuple[str, ...]:
        return tuple(c.tool for b in self.batches for c in b)


def item_for(turn: int, index: int, call: CallShape) -> str:
    """The argument of call `index` (1-based) of batch `turn`; "bad-…" items make tools raise."""
    return f"{'bad' if call.fails else 'ok'}-{turn}-{index}"


class ItemBroken(ValueError):
    """A random scenario's failing call."""


def tool_output(tool: str, item: str) -> str:
    """What a random tool returns for an item (or raises, for "bad-…" items)."""
    if item.startswith("bad-"):
        raise ItemBroken(f"{tool} cannot handle {item}")
    value = int(hashlib.sha256(f"{tool}/{item}".encode()).hexdigest()[:6], 16) % 10_000
    return f"{tool} {item} = {value}"


def tools(env: ToolEnv) -> list[Callable[..., Any]]:
    def lookup(item: str) -> str:
        """Look an item up."""
        return tool_output("lookup", item)

    def compute(item: str) -> str:
        """Compute a value for an item."""
        return tool_output("compute", item)

    def record(item: str) -> str:
        """Record an item (a side effect on every call)."""
        return tool_output("record", item)

    @idempotent
    def record_once(item: str, idempotency_key: str) -> str:
        """Record an item, once per idempotency key."""
        return tool_output("record_once", item)

    return [lookup, compute, record, record_once]


def _failed(output: str | None) -> bool:
    return output is None or "error" in output.lower()


def final_text(outputs: list[str | None]) -> str:
    ok = [o for o in outputs if not _failed(o)]
    digest = hashlib.sha256("\n".join(o for o in ok if o is not None).encode()).hexdigest()[:12]
    return f"{len(outputs)} calls, {len(outputs) - len(ok)} failed, results {digest}."


def make_script(shape: Shape) -> Script:
    def script(conversation: Conversation) -> Reply:
        turns = conversation.turns()
        k = len(turns)
        if k < len(shape.batches):
            return Reply.batch(
                *(
                    ToolRequest(c.tool, {"item": item_for(k + 1, i + 1, c)})
                    for i, c in enumerate(shape.batches[k])
                )
            )
        return Reply.final(final_text([t.output_of(c) for t in turns for c in t.calls]))

    return script


def expected_content(shape: Shape) -> str:
    outputs: list[str | None] = []
    for turn, batch in enumerate(shape.batches, 1):
        for index, call in enumerate(batch, 1):
            item = item_for(turn, index, call)
            outputs.append(None if call.fails else tool_output(call.tool, item))
    return final_text(outputs)


def scenario_from_shape(shape: Shape, *, name: str | None = None) -> Scenario:
    sizes = "/".join(str(len(b)) for b in shape.batches)
    failing = sum(c.fails for b in shape.batches for c in b)
    return Scenario(
        name=name or f"random-shape-{shape.key}",
        description=f"random: batches of {sizes} calls, {failing} failing",
        script=make_script(shape),
        tools=tools,
        inputs=(f"Work through shape {shape.key}.",),
        expected=(Expected(content=expected_content(shape), calls=shape.calls),),
    )


# -- hypothesis ------------------------------------------------------------------------


def call_shapes() -> st.SearchStrategy[CallShape]:
    return st.builds(
        CallShape,
        tool=st.sampled_from(TOOL_NAMES),
        fails=st.integers(1, FAIL_ONE_IN).map(lambda n: n == 1),
    )


def scenario_shapes(
    *, max_batches: int = MAX_BATCHES, max_batch_size: int = MAX_BATCH_SIZE
) -> st.SearchStrategy[Shape]:
    """Shapes: 1..max_batches batches of 1..max_batch_size calls over the tool mix."""
    batch = st.lists(call_shapes(), min_size=1, max_size=max_batch_size).map(tuple)
    return st.lists(batch, min_size=1, max_size=max_batches).map(
        lambda batches: Shape(tuple(batches))
    )


def random_scenarios(
    *, max_batches: int = MAX_BATCHES, max_batch_size: int = MAX_BATCH_SIZE
) -> st.SearchStrategy[Scenario]:
    """Scenarios built from `scenario_shapes()`; hypothesis shrinks them by shape."""
    return scenario_shapes(max_batches=max_batches, max_batch_size=max_batch_size).map(
        scenario_from_shape
    )


# -- from a seed -----------------------------------------------------------------------


def shape_from_seed(seed: int) -> Shape:
    """The same shape for the same seed, in every process and Python version (random.Random)."""
    rng = random.Random(seed)
    batches = tuple(
        tuple(
            CallShape(rng.choice(TOOL_NAMES), rng.randrange(FAIL_ONE_IN) == 0)
            for _ in range(rng.randint(1, MAX_BATCH_SIZE))
        )
        for _ in range(rng.randint(1, MAX_BATCHES))
    )
    return Shape(batches)


def scenario_from_seed(seed: int) -> Scenario:
    """A random scenario named `random-{seed}` (catalog.get("random-{seed}") rebuilds it)."""
    return scenario_from_shape(shape_from_seed(seed), name=f"random-{seed}")
