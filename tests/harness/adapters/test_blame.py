# ruff: noqa: SIM300 - tests assert `expected == actual`
"""An adapter read that raises or answers outside its Protocol is the adapter's finding:
the method, the exception, redacted."""

from __future__ import annotations

from typing import Any

import pytest

from killpoint.adapters.blame import charged, checked, checked_problems, checked_session
from killpoint.errors import AdapterFault
from killpoint.values.findings import KINDS, Finding


def raising(*_: Any) -> Any:
    raise KeyError("runs")


class TestCharged:
    def test_an_exception_names_the_method_and_the_exception(self) -> None:
        with pytest.raises(AdapterFault) as caught:
            charged("read_session()", raising)("sqlite:///x.db", "s")
        assert "the adapter's read_session() raised KeyError: 'runs'" == str(caught.value)
        assert "read_session()" == caught.value.method
        assert any("raising" in line for line in caught.value.evidence)

    def test_a_password_in_the_message_is_masked(self) -> None:
        def leaky(*_: Any) -> Any:
            raise RuntimeError("cannot open postgresql://kp:s3cret-pw@db/kp")

        with pytest.raises(AdapterFault) as caught:
            charged("inspect()", leaky)()
        assert "s3cret-pw" not in str(caught.value)
        assert "postgresql://kp:" in str(caught.value)

    def test_a_value_passes_through(self) -> None:
        assert 3 == charged("progress()", lambda *_: 3)("u", "s")


class TestChecked:
    def test_an_invalid_normal_form_is_the_adapters(self) -> None:
        with pytest.raises(AdapterFault) as caught:
            checked_session({"state": {}}, "tinyagent")
        text = str(caught.value)
        assert text.startswith("the adapter's read_session() returned an invalid normal form: ")
        assert "runs" in text and "killpoint: " not in text

    def test_a_session_in_the_normal_form_and_none_pass(self) -> None:
        checked_session({"state": {}, "runs": {}}, "tinyagent")
        checked_session(None, "tinyagent")

    @pytest.mark.parametrize("value", ["3", True, None, 2.0])
    def test_progress_is_an_int(self, value: Any) -> None:
        with pytest.raises(AdapterFault, match=r"progress\(\) returned .*; it returns an int"):
            checked("progress()", value, int, "an int")

    def test_inspect_returns_a_list_of_sentences_or_findings(self) -> None:
        found = Finding("inconsistency", "usage disagrees", path="store")
        assert ["broken", found] == checked_problems(("broken", found))
        with pytest.raises(AdapterFault, match=r"inspect\(\) returned str 'broken'"):
            checked_problems("broken")
        with pytest.raises(AdapterFault, match=r"returned int 3 at \[1\]"):
            checked_problems(["fine", 3])


def test_the_kind_is_its_own_verdict() -> None:
    """Neither killpoint's `error` nor `missed`: a verdict that names the adapter."""
    assert "adapter-error" == KINDS["adapter-error"].verdict
