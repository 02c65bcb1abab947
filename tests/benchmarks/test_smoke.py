"""Every benchmark has its smoke test, and the helpers they share read what they should."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.benchmarks.smoke import figure

HERE = Path(__file__).parent


def test_every_runnable_benchmark_has_a_smoke_test_of_its_own() -> None:
    runnable = [
        p.stem
        for p in HERE.glob("*.py")
        if not p.stem.startswith("test_") and 'if __name__ == "__main__":' in p.read_text()
    ]
    assert "matrix_speed" in runnable
    missing = [name for name in runnable if not (HERE / f"test_{name}.py").exists()]
    assert missing == []


def test_figure_reads_the_first_number_after_its_label() -> None:
    out = "cells                       219  (0 unexpected)\nCPU per cell   1,085 ms\n"
    assert figure(out, "cells") == 219
    assert figure(out, "CPU per cell") == 1085


def test_figure_fails_where_the_label_has_no_number() -> None:
    with pytest.raises(pytest.fail.Exception, match="no figure for 'wall time'"):
        figure("wall time  n/a\n", "wall time")
