"""Matrix node ids that pytest takes back: `pytest 'killpoint::CELL'` reruns that cell
(and only it, besides the paths given), under xdist too; skips located at the row's node
id; JUnit cases classed by row. End to end with pytester, in subprocesses."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from types import SimpleNamespace
from typing import Any

import pytest

from killpoint.plugin.node_ids import row_of, take_cells
from tests.harness.plugin.test_hooks import RESEARCH_CELLS, cells, read_json, run

pytest_plugins = ["pytester"]

OTHER = "def test_other():\n    assert True\n"


class TestArguments:
    def test_cell_arguments_are_taken_out_of_the_paths(self) -> None:
        """What stays is what pytest collects as files; an empty list collects none."""
        config: Any = SimpleNamespace(args=["tests/test_x.py", f"killpoint::{RESEARCH_CELLS[0]}"])
        assert (RESEARCH_CELLS[0],) == take_cells(config)
        assert config.args == ["tests/test_x.py"]
        only: Any = SimpleNamespace(args=[f"killpoint::{RESEARCH_CELLS[1]}"])
        take_cells(only)
        assert only.args == []

    def test_rows_for_junit(self) -> None:
        """classname by row, name the rest; nodes of other files are left alone."""
        assert row_of(f"killpoint::{RESEARCH_CELLS[0]}") == (
            "killpoint.reference/research/tool-batch",
            "sqlite/after-checkpoint:1",
        )
        assert row_of("killpoint::reference/confirm/runs/sqlite/without-crash") == (
            "killpoint.reference/confirm/runs",
            "sqlite/without-crash",
        )
        assert row_of("killpoint::planning") is None
        assert row_of("tests/test_x.py::test_y") is None


@pytest.mark.slow
class TestRerunByNodeId:
    def test_a_node_id_from_a_failed_line_reruns_that_cell_only(
        self, pytester: pytest.Pytester
    ) -> None:
        """No --crash-matrix needed; the test file in the folder is not collected (no path
        was given), and the JSON holds the one cell; JUnit classes it by row."""
        pytester.makepyfile(test_other=OTHER)
        result = run(
            pytester, f"killpoint::{RESEARCH_CELLS[1]}", "--crash-json=r.json", "--junitxml=j.xml"
        )
        result.assert_outcomes(passed=1)
        assert [(RESEARCH_CELLS[1], "ok", True)] == cells(read_json(pytester.path / "r.json"))
        case = ET.parse(pytester.path / "j.xml").getroot().find(".//testcase")
        assert case is not None
        assert (
            case.get("classname"),
            case.get("name"),
        ) == ("killpoint.reference/research/tool-batch", "sqlite/after-checkpoint:2")

    def test_under_xdist_with_a_path_beside_them(self, pytester: pytest.Pytester) -> None:
        """-n 2: every worker takes the same arguments out and collects the controller's
        plan of the two cells; the file given runs too."""
        pytester.makepyfile(test_other=OTHER)
        result = run(
            pytester, "-n", "2", "test_other.py",
            f"killpoint::{RESEARCH_CELLS[0]}", f"killpoint::{RESEARCH_CELLS[3]}",
            "--crash-json=r.json", timeout=480,  # three processes on a shared machine
        )  # fmt: skip
        result.assert_outcomes(passed=3)
        chosen = [RESEARCH_CELLS[0], RESEARCH_CELLS[3]]
        assert [(c, "ok", True) for c in chosen] == cells(read_json(pytester.path / "r.json"))

    @pytest.mark.parametrize(
        ("arg", "said"),
        [
            (
                "killpoint::reference/research/nope",
                "ERROR: killpoint: 'killpoint::reference/research/nope' is not a cell's node id: ",
            ),
            (
                "killpoint::reference/research/tool-batch/postgresql/after-checkpoint:1",
                "ERROR: killpoint: killpoint::reference/research/tool-batch/postgresql/"
                "after-checkpoint:1 ran on postgresql, this session runs cells on sqlite; give "
                "--crash-store the postgresql+psycopg:// URL",
            ),
        ],
    )
    def test_a_node_id_that_is_not_a_cell_is_a_usage_error(
        self, pytester: pytest.Pytester, arg: str, said: str
    ) -> None:
        """Malformed, or of another store than the session's: one line, before anything runs."""
        result = pytester.runpytest_subprocess(arg)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        assert any(line.startswith(said) for line in result.stderr.lines), result.stderr.str()

    def test_a_skipped_row_is_located_at_its_node_id(self, pytester: pytest.Pytester) -> None:
        """`SKIPPED [1] killpoint::ROW/POINT: why`, not `SKIPPED [1] .: why`."""
        result = run(
            pytester, "--crash-matrix", "--crash-scenarios=research", "--crash-modes=runs",
            "--crash-points=lock-held:2", "-rs",
        )  # fmt: skip
        result.stdout.fnmatch_lines(
            [
                "SKIPPED [[]1[]] killpoint::reference/research/runs/sqlite/lock-held:2: point lock-held:2 is not in this row*"
            ]
        )
        assert "SKIPPED [1] .:" not in result.stdout.str()
