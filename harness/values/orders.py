"""Orders of a tool batch's calls, numbered: a `finish-order:K:I` point names order I of
batch K by its rank among all orders of the batch's calls, in lexicographic order (rank 0 is
call order, the order every other cell finishes them in). A rank names one order exactly,
so a cell id replays it, and a smaller rank is a smaller change (hypothesis shrinks a failing
order toward call order).

Small batches offer every order. A large one offers orders drawn PCT-style (Burckhardt et
al., "A Randomized Scheduler with Probabilistic Guarantees of Finding Bugs", ASPLOS 2010):
each call gets a random priority, the highest-priority unfinished call finishes next, and at
`depth - 1` random steps the call about to finish is demoted below every other. An order
bug that needs d calls to finish in a given relative order is found by one draw with a
probability of at least 1 / (n * n^(d-1)), whatever the batch's size.
"""

from __future__ import annotations

import random
from math import factorial

from killpoint.errors import PointError
from killpoint.values.sentences import count

EVERY_ORDER_UP_TO = 3  # batches of up to this many calls offer every order (3! = 6)
DEPTH = 3  # PCT's bug depth: 2 priority changes per draw


def rank(order: tuple[int, ...] | list[int]) -> int:
    """The order's place among all orders of its calls, lexicographically (0: 0, 1, 2...)."""
    left = list(range(len(order)))
    found = 0
    for place, call in enumerate(order):
        j = left.index(call)
        found += j * factorial(len(order) - 1 - place)
        left.pop(j)
    return found


def unrank(n_rank: int, n: int) -> tuple[int, ...]:
    """The order of `n` calls with this rank; PointError (a ValueError) outside 0 .. n!-1."""
    if not 0 <= n_rank < factorial(n):
        raise PointError(
            f"killpoint: order {n_rank} of {count(n, 'call')}: give 0..{factorial(n) - 1}"
        )
    left = list(range(n))
    order = []
    for place in range(n):
        j, n_rank = divmod(n_rank, factorial(n - 1 - place))
        order.append(left.pop(j))
    return tuple(order)


def pct(n: int, rng: random.Random, depth: int = DEPTH) -> tuple[int, ...]:
    """One PCT draw: the order `n` calls finish in under random priorities with
    `depth - 1` demotions at random steps."""
    priority = dict(zip(range(n), rng.sample(range(depth, depth + n), n), strict=True))
    changes = set(rng.sample(range(n), min(depth - 1, n)))
    low = depth - 1
    left = set(range(n))
    order: list[int] = []
    for step in range(n):
        top = max(left, key=priority.__getitem__)
        if step in changes:
            priority[top], low = low, low - 1
            top = max(left, key=priority.__getitem__)
        order.append(top)
        left.remove(top)
    return tuple(order)


def offered(n: int, seed: str, draws: int) -> list[int]:
    """The ranks a batch of `n` calls offers, other than call order: every one for a small
    batch, else the distinct ranks of `draws` PCT draws seeded by `seed`."""
    if n < 2:
        return []
    if n <= EVERY_ORDER_UP_TO:
        return list(range(1, factorial(n)))
    rng = random.Random(seed)
    return sorted({rank(pct(n, rng)) for _ in range(draws)} - {0})


__all__ = ["DEPTH", "EVERY_ORDER_UP_TO", "offered", "pct", "rank", "unrank"]
