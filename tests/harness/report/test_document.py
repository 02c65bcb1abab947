"""A report names the versions of what ran, LangGraph's savers included."""

from __future__ import annotations

from importlib import metadata

import pytest

from killpoint.report.document import versions


@pytest.mark.parametrize(
    "dist",
    [
        "langgraph-checkpoint",
        "langgraph-checkpoint-sqlite",
        "langgraph-checkpoint-postgres",
        "aiosqlite",
    ],
)
def test_each_installed_saver_is_named_with_its_version(dist: str) -> None:
    try:
        installed = metadata.version(dist)
    except metadata.PackageNotFoundError:
        pytest.skip(f"{dist} is not installed here")
    assert versions()[dist] == installed


def test_what_is_not_installed_is_left_out() -> None:
    assert "no-such-distribution-here" not in versions(("no-such-distribution-here",))
    assert versions()["python"].count(".") == 2
