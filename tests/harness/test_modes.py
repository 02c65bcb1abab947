"""Modes as runtimes declare them, and an adapter's declarations checked when it loads."""

# ruff: noqa: SIM300
from __future__ import annotations

import pytest

from killpoint.adapter import AdapterError, check_declarations, load_adapter
from killpoint.adapters.reference import ReferenceAdapter
from killpoint.modes import REFERENCE_MODES, Mode, runnable


class TestMode:
    @pytest.mark.parametrize("name", ["", "a/b", "a,b", "a+b", "two words"])
    def test_a_name_that_cannot_sit_in_a_cell_id_is_refused(self, name: str) -> None:
        with pytest.raises(ValueError, match="mode name"):
            Mode(name, "meaning")

    def test_a_meaning_is_one_line(self) -> None:
        with pytest.raises(ValueError, match="one line"):
            Mode("sync", "two\nlines")

    def test_the_reference_modes(self) -> None:
        assert ("runs", "tool-batch", "tool") == runnable(REFERENCE_MODES)
        assert [False, True, True] == [m.persists_mid_run for m in REFERENCE_MODES]
        assert [False, False, True] == [m.results_per_call for m in REFERENCE_MODES]


class TestDeclarations:
    def test_mode_names_where_modes_belong_are_refused_with_the_fix(self) -> None:
        adapter = ReferenceAdapter()
        adapter.modes = ("runs", "tool")  # type: ignore[assignment]
        with pytest.raises(AdapterError, match=r"give a sequence of killpoint\.Mode"):
            check_declarations("mine:adapter", adapter)

    def test_a_runtime_that_can_run_no_mode_is_refused(self) -> None:
        adapter = ReferenceAdapter()
        adapter.modes = (Mode("sync", "always", unavailable="not yet"),)
        with pytest.raises(AdapterError, match="no mode it can run"):
            check_declarations("mine:adapter", adapter)

    def test_a_hand_written_adapter_missing_members_is_told_which(self) -> None:
        with pytest.raises(AdapterError) as info:
            load_adapter("tests.harness.test_modes:Partial")
        message = str(info.value)
        assert "missing: excluded, preload_modules, inspect, lease_deadline, unsupported" in message
        assert "subclass killpoint.RuntimeAdapter" in message


class Partial:
    """An adapter written out by hand, without the optional members."""

    name = "partial"
    modes = REFERENCE_MODES

    def instrument(self, checkpoints: object) -> None: ...

    def driver(self, *args: object, **kwargs: object) -> None: ...

    def progress(self, store_url: str, session_id: str) -> int:
        return 0

    def read_session(self, store_url: str, session_id: str) -> None:
        return None
