"""The optional declarations of the RuntimeAdapter Protocol, read where present: an adapter
that declares the stores it supports is told apart from one that declares none (every
store, as before the attribute existed)."""

# ruff: noqa: SIM300
from __future__ import annotations

import pytest

from killpoint.adapters.protocol import store_unsupported, supported_stores
from killpoint.adapters.reference import ReferenceAdapter
from tests.harness.declining_runtimes import SqliteOnlyAdapter


class Undeclared:
    """Written out without `stores`, as every adapter was before it existed."""


@pytest.mark.parametrize("kind", ["sqlite", "postgresql"])
def test_an_adapter_that_declares_no_stores_runs_on_every_kind(kind: str) -> None:
    for adapter in (Undeclared(), ReferenceAdapter()):
        assert None is supported_stores(adapter)
        assert None is store_unsupported("mine", adapter, kind)


def test_a_declared_store_is_supported_and_another_names_both() -> None:
    adapter = SqliteOnlyAdapter()
    assert ("sqlite",) == supported_stores(adapter)
    assert None is store_unsupported("pkg.mod:adapter", adapter, "sqlite")
    assert (
        "runtime 'pkg.mod:adapter' does not run on a postgresql store: its adapter supports "
        "sqlite only (its `stores`)"
    ) == store_unsupported("pkg.mod:adapter", adapter, "postgresql")
