"""The innermost line of a project's own code in a traceback (killpoint.values.own_code)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from killpoint.values.own_code import innermost


def test_the_innermost_line_is_the_users_not_the_harness_or_a_librarys(tmp_path: Path) -> None:
    (tmp_path / "users_code.py").write_text(
        "import json\n\ndef parse():\n    return json.loads('{')\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        import users_code  # type: ignore[import-not-found]

        with pytest.raises(ValueError) as raised:
            users_code.parse()
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("users_code", None)
    where = innermost(raised.tb)
    assert where is not None and where.endswith("users_code.py:4, in parse"), where


def test_a_traceback_of_the_harness_alone_names_no_line() -> None:
    from killpoint.values.durations import duration

    with pytest.raises(Exception) as raised:
        duration("--budget", "soon")
    # Only this test's frame is outside the harness: it is the line named.
    assert (innermost(raised.tb) or "").endswith(
        "test_a_traceback_of_the_harness_alone_names_no_line"
    )
    assert innermost(raised.tb.tb_next) is None


def test_who_raised_is_the_innermost_frames_module() -> None:
    """An exception raised in killpoint's own code is the harness's, whoever called it;
    one raised in a library (json) under the user's code is not."""
    from killpoint.values.durations import duration
    from killpoint.values.own_code import raised_by_harness

    with pytest.raises(Exception) as ours:
        duration("soon")  # type: ignore[arg-type]
    assert raised_by_harness(ours.tb)
    with pytest.raises(ValueError) as theirs:
        __import__("json").loads("{")
    assert not raised_by_harness(theirs.tb)
