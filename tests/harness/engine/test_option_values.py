"""An option's value read with its reader: a misspelt name gets the one it most likely
meant, with the choices (the same sentence on every front: test_option_table.py)."""

# ruff: noqa: SIM300
from __future__ import annotations

import pytest

from killpoint.engine.option_values import choice, points
from killpoint.errors import OptionError


def refused(reader: object, value: str) -> OptionError:
    with pytest.raises(OptionError) as caught:
        reader("points", value)  # type: ignore[operator]
    return caught.value


@pytest.mark.parametrize(
    ("value", "meant"),
    [
        ("boundary", "boundaries"),  # a group
        ("after-checkpont", "after-checkpoint"),  # a kind
        ("after-checkpont:2", "after-checkpoint:2"),  # a point: its kind respelt
        ("kills,power_loss", "power-loss"),  # the item that is wrong, in a list
    ],
)
def test_a_misspelt_point_item_gets_the_one_it_meant(value: str, meant: str) -> None:
    error = refused(points, value)
    assert error.reason.startswith("not a group (boundaries, kills")
    assert error.reason.endswith(f"; did you mean {meant!r}?")


def test_a_point_item_nothing_is_near_gets_no_guess() -> None:
    assert "did you mean" not in refused(points, "zzzzzz").reason


def test_a_misspelt_choice_gets_the_one_it_meant() -> None:
    read = choice(("none", "failed", "all"), "not a keep policy")
    assert "failed" == read("keep", "failed")
    error = refused(read, "faild")
    assert "not a keep policy; did you mean 'failed'? choose from none, failed, all" == error.reason
    assert "not a keep policy; choose from none, failed, all" == refused(read, "zzzz").reason
