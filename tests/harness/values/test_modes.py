"""Modes as runtimes declare them, and an adapter's declarations checked when it loads."""

# ruff: noqa: SIM300
from __future__ import annotations

from pathlib import Path

import pytest

from killpoint.adapters.reference import ReferenceAdapter
from killpoint.adapters.registry import check_declarations, load_adapter
from killpoint.engine.engine import Engine
from killpoint.engine.options import EngineConfig
from killpoint.errors import AdapterError
from killpoint.values.modes import FLAGS, REFERENCE_MODES, Mode, runnable


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
        assert [False, False, False] == [m.writes_lag for m in REFERENCE_MODES]

    @pytest.mark.parametrize("flag", FLAGS)
    def test_each_flag_is_a_bool_named_when_it_is_not(self, flag: str) -> None:
        with pytest.raises(ValueError, match=rf"mode 'sync': {flag} must be True or False"):
            Mode("sync", "always", **{flag: "yes"})

    def test_a_mode_whose_writes_lag_says_so(self) -> None:
        mode = Mode("async", "written in the background, behind the run", writes_lag=True)
        assert (True, True, False) == (
            mode.writes_lag,
            mode.persists_mid_run,
            mode.results_per_call,
        )
        assert "writes_lag" in FLAGS

    def test_results_per_call_without_durable_tool_results_is_refused(self) -> None:
        assert Mode("model-steps", "replies only", tool_results_durable=False).persists_mid_run
        with pytest.raises(ValueError, match=r"mode 'both'.*drop one"):
            Mode("both", "contradicts", results_per_call=True, tool_results_durable=False)


class TestDeclarations:
    def test_mode_names_where_modes_belong_are_refused_with_the_fix(self) -> None:
        adapter = ReferenceAdapter()
        adapter.modes = ("runs", "tool")  # type: ignore[assignment]
        with pytest.raises(AdapterError, match=r"give a sequence of killpoint\.Mode"):
            check_declarations("mine:adapter", adapter)

    def test_a_mode_that_lags_is_planned_as_one(self, tmp_path: Path) -> None:
        """The declaration reaches the baseline the engine plans from, and the report."""
        engine = Engine(EngineConfig(work_root=tmp_path, keep="none"))
        base = engine.baseline((LAGGING, "research", "tool-batch", "sqlite"))
        assert (None, True, None) == (base.problem, base.writes_lag, base.trace_note)
        assert base.other_trace  # the second run's trace, planned against
        plain = engine.baseline(("reference", "research", "tool-batch", "sqlite"))
        assert (False, base.checkpoints) == (plain.writes_lag, plain.checkpoints)

    def test_a_runtime_that_can_run_no_mode_is_refused(self) -> None:
        adapter = ReferenceAdapter()
        adapter.modes = (Mode("sync", "always", unavailable="not yet"),)
        with pytest.raises(AdapterError, match="no mode it can run"):
            check_declarations("mine:adapter", adapter)

    def test_a_hand_written_adapter_missing_members_is_told_which(self) -> None:
        with pytest.raises(AdapterError) as info:
            load_adapter("tests.harness.values.test_modes:Partial")
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


LAGGING = "tests.harness.values.test_modes:LaggingReference"


class LaggingReference(ReferenceAdapter):
    """The reference runtime, its tool-batch mode declared as one whose writes lag."""

    modes = (Mode("tool-batch", "declared as lagging, for the test", writes_lag=True),)
