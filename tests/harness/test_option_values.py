"""Values users give the plugin: lists with commas or spaces, and runtime references that
fail with the fix in the message."""

# ruff: noqa: SIM300
from __future__ import annotations

import pytest

from killpoint.option_values import load_runtime, split_list


class Refused(Exception):
    """Stands for the error a caller raises (a UsageError, a ConfigError)."""


def build_agent(name: str) -> None:
    """An Agent factory that was never wrapped in agent_adapter."""


def test_lists_take_commas_spaces_or_both() -> None:
    assert ("tool-batch", "tool", "runs") == split_list(" tool-batch, tool\n runs,")
    assert () == split_list("  ")


def test_a_built_in_runtime_loads() -> None:
    adapter = load_runtime("reference", Refused)

    assert ("runs", "tool-batch", "tool") == tuple(m.name for m in adapter.modes)


def test_an_unknown_runtime_raises_the_callers_error_with_the_loaders_reason() -> None:
    with pytest.raises(Refused, match="unknown runtime 'nope'; choose from reference"):
        load_runtime("nope", Refused)
    with pytest.raises(Refused, match="'kp_no_such_module:x' cannot be imported"):
        load_runtime("kp_no_such_module:x", Refused)


def test_an_unwrapped_agent_factory_is_refused_with_the_fix() -> None:
    with pytest.raises(Refused) as refused:
        load_runtime(f"{__name__}:build_agent", Refused)

    message = str(refused.value)
    assert message.startswith("calling it gave TypeError: ")
    assert "decorate it with killpoint.agent_adapter" in message
