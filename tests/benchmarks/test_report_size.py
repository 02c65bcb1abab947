"""report_size runs on its smallest input and prints its figures."""

from __future__ import annotations

from pathlib import Path

from tests.benchmarks.smoke import figure, run_benchmark


def test_it_writes_the_report_and_prints_its_size(tmp_path: Path) -> None:
    out_file = tmp_path / "report.html"
    out = run_benchmark("report_size", "--cells", "40", "--no-browser", "--out", str(out_file))
    assert figure(out, "cells:") >= 40
    assert figure(out, "html size:") > 0
    assert figure(out, "bytes/cell:") > 0
    assert out_file.stat().st_size > 0
