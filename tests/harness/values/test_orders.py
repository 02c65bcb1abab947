# ruff: noqa: SIM300 - tests assert `expected == actual`
"""Orders of a batch's calls, numbered by rank; every order of a small batch, PCT draws of a
large one."""

from __future__ import annotations

import random
from itertools import permutations
from math import factorial

import pytest

from killpoint.errors import PointError
from killpoint.values import orders


@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_ranks_number_every_order_once_in_lexicographic_order(n: int) -> None:
    every = list(permutations(range(n)))
    assert list(range(factorial(n))) == [orders.rank(p) for p in every]
    assert every == [orders.unrank(r, n) for r in range(factorial(n))]


def test_rank_zero_is_call_order_and_a_bad_rank_names_the_range() -> None:
    assert (0, 1, 2) == orders.unrank(0, 3)
    with pytest.raises(PointError, match=r"give 0\.\.5"):
        orders.unrank(6, 3)


def test_a_pct_draw_is_an_order_and_the_same_seed_draws_it_again() -> None:
    for n in range(1, 9):
        drawn = orders.pct(n, random.Random(f"s{n}"))
        assert sorted(drawn) == list(range(n))
        assert drawn == orders.pct(n, random.Random(f"s{n}"))


def test_pct_draws_reach_orders_far_from_call_order() -> None:
    """The demotions move a call from the front to the back, and priorities shuffle the
    rest: over a few draws, more than one call finishes first and more than one last."""
    rng = random.Random(7)
    drawn = [orders.pct(6, rng) for _ in range(40)]
    assert len({d[0] for d in drawn}) > 2 and len({d[-1] for d in drawn}) > 2


def test_a_small_batch_offers_every_other_order_a_large_one_distinct_draws() -> None:
    assert [] == orders.offered(1, "x", 16)
    assert [1] == orders.offered(2, "x", 16)
    assert [1, 2, 3, 4, 5] == orders.offered(3, "x", 16)
    large = orders.offered(6, "row/1", 16)
    assert 0 not in large and len(large) == len(set(large)) and 1 < len(large) <= 16
    assert large == orders.offered(6, "row/1", 16)
    assert large != orders.offered(6, "row/2", 16)
