"""PerUrl: one object per store URL, the oldest disposed past the limit."""

# ruff: noqa: SIM300
from __future__ import annotations

from killpoint.per_url import PerUrl


def test_one_object_per_url_and_the_oldest_disposed() -> None:
    disposed: list[str] = []
    cache: PerUrl[list[str]] = PerUrl(lambda url: [url], lambda item: disposed.append(item[0]), 2)

    first = cache("a")
    assert first is cache("a")
    cache("b")
    assert [] == disposed
    cache("c")
    assert ["a"] == disposed
    assert first is not cache("a")  # made again once disposed
    assert ["a", "b"] == disposed
