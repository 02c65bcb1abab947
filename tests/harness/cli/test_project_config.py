"""`[tool.killpoint]` in pyproject.toml: found from the current folder upward, checked key
by key and type by type, the command line winning; and the matrix refusing a bad table
with one line and exit 2."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from killpoint.cli.project_config import merge, read
from killpoint.errors import ProjectConfigError

REPO = Path(__file__).resolve().parents[3]


def project(folder: Path, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "pyproject.toml").write_text(text)
    return folder


class TestFinding:
    def test_the_nearest_file_with_the_table_wins(self, tmp_path: Path) -> None:
        """As ruff does: a pyproject.toml without [tool.killpoint] on the way is passed by."""
        project(tmp_path, '[tool.killpoint]\nmodes = ["runs", "tool"]\ndepth = 2\n')
        project(tmp_path / "pkg", '[project]\nname = "pkg"\n')
        found = read(tmp_path / "pkg")
        assert tmp_path / "pyproject.toml" == found.path
        assert found.values == {"modes": "runs,tool", "depth": "2"}

    def test_no_table_anywhere_is_no_configuration(self, tmp_path: Path) -> None:
        """Another tool's table configures nothing here."""
        project(tmp_path, "[tool.ruff]\nline-length = 100\n")
        assert read(tmp_path).path is None
        assert read(tmp_path).values == {}

    def test_paths_are_relative_to_the_files_folder(self, tmp_path: Path) -> None:
        """As pytest reads paths in its ini file."""
        project(tmp_path, '[tool.killpoint]\njson = "out/m.json"\nwork-dir = "/tmp"\n')
        (tmp_path / "sub").mkdir()
        found = read(tmp_path / "sub")
        assert {"json": str(tmp_path / "out/m.json"), "work_dir": "/tmp"} == found.values

    def test_accept_builtin_is_the_runtimes_file_not_a_path(self, tmp_path: Path) -> None:
        """`accept = "builtin"` means the groups the runtime's documentation calls by
        design (as `--accept builtin` does), not a file named builtin beside the file; any
        other value is a path from the file's folder."""
        from killpoint.adapters.registry import accepted_file
        from killpoint.engine.acceptances import accepted_groups
        from killpoint.judge.groups import read_accepted

        project(tmp_path, '[tool.killpoint]\naccept = "builtin"\n')
        found = read(tmp_path)
        assert found.values == {"accept": "builtin"}
        builtin = accepted_file("agno")
        assert builtin is not None
        assert read_accepted(builtin) == accepted_groups(found.values["accept"], "agno")
        project(tmp_path, '[tool.killpoint]\naccept = "./builtin"\n')
        assert {"accept": str(tmp_path / "builtin")} == read(tmp_path).values


class TestRefused:
    @pytest.mark.parametrize(
        ("table", "said"),
        [
            ("dept = 2", "[tool.killpoint] has no option 'dept'; choose from runtime,"),
            ('depth = "2"', "[tool.killpoint] depth must be an integer, not a string ('2')"),
            ("timeout = true", "timeout must be a number, not a boolean (True)"),
            (
                "modes = [1]",
                "modes must be names (a list of names, or one string of them), not a list",
            ),
            ("store = {url = 'x'}", "store must be a string, not a dict"),
        ],
    )
    def test_an_unknown_key_or_a_wrong_type_names_key_and_file(
        self, tmp_path: Path, table: str, said: str
    ) -> None:
        """One error naming the key, what it must be, what it was, and the file."""
        project(tmp_path, f"[tool.killpoint]\n{table}\n")
        with pytest.raises(ProjectConfigError) as caught:
            read(tmp_path)
        assert str(tmp_path / "pyproject.toml") in str(caught.value)
        assert said in str(caught.value)

    def test_a_file_that_is_not_toml_is_named(self, tmp_path: Path) -> None:
        """A broken pyproject.toml on the way is named, not taken for an empty one."""
        project(tmp_path, "[tool.killpoint\n")
        with pytest.raises(ProjectConfigError, match="is not TOML"):
            read(tmp_path)


class TestMerge:
    def test_the_command_line_wins(self) -> None:
        """What was typed stays; the file fills only what was not."""
        from killpoint.cli.project_config import ProjectConfig

        file = ProjectConfig(Path("pyproject.toml"), {"depth": "2", "modes": "runs"})
        assert merge({"depth": "1", "modes": None, "seed": None}, file) == {
            "depth": "1",
            "modes": "runs",
            "seed": None,
        }


def killpoint(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", *args],
        cwd=cwd, capture_output=True, text=True, timeout=120, env=env,
    )  # fmt: skip


@pytest.mark.slow
class TestTheMatrixReadsIt:
    def test_a_bad_key_is_one_line_and_exit_2(self, tmp_path: Path) -> None:
        """Before anything runs: one line, exit 2, no report."""
        project(tmp_path, "[tool.killpoint]\nfail_on = 'low'\n")
        result = killpoint(tmp_path, "matrix")
        assert result.returncode == 2
        assert result.stderr.startswith(
            f"killpoint: {tmp_path / 'pyproject.toml'}: [tool.killpoint] has no option "
            "'fail_on'; choose from runtime, scenarios,"
        )
        assert len(result.stderr.splitlines()) == 1
        assert not (tmp_path / "reports").exists()

    def test_a_bad_value_is_named_by_its_key_and_file(self, tmp_path: Path) -> None:
        """A value of the right type is checked as the option typed would be, and the
        line names the table's key, not a flag nobody typed."""
        project(tmp_path, "[tool.killpoint]\nmodes = 'fast'\n")
        result = killpoint(tmp_path, "matrix")
        assert result.returncode == 2
        assert (
            f"killpoint: [tool.killpoint] modes in {tmp_path / 'pyproject.toml'}='fast': not a "
            "mode of runtime 'reference'" in result.stderr
        )
        typed = killpoint(tmp_path, "matrix", "--modes", "slow")
        assert "killpoint: --modes='slow': not a mode" in typed.stderr

    def test_the_file_sets_the_campaign_and_the_command_line_wins(self, tmp_path: Path) -> None:
        """The file chooses scenario, mode, points and where the JSON goes; --points on
        the command line replaces the file's."""
        project(
            tmp_path,
            "[tool.killpoint]\nscenarios = ['research']\nmodes = 'tool-batch'\n"
            "points = 'boundaries'\njson = 'out/m.json'\nreport = 'out/m.html'\nkeep = 'none'\n",
        )
        result = killpoint(tmp_path, "matrix", "--points", "after-checkpoint:2", "--quiet")
        assert result.returncode == 0, result.stderr
        cells = json.loads((tmp_path / "out" / "m.json").read_text())["cells"]
        assert [c["id"] for c in cells] == [
            "reference/research/tool-batch/sqlite/after-checkpoint:2"
        ]

    def test_the_file_sets_how_cells_are_killed(self, tmp_path: Path) -> None:
        """One run of the front: [tool.killpoint] takes every option the table gives it,
        kills, cut, fs-ops and model-behaviour included; with kills = 'real' no cell
        resumes from a traced copy (two kill cells of a row would, by default)."""
        project(
            tmp_path,
            "[tool.killpoint]\nscenarios = 'research'\nmodes = 'tool-batch'\n"
            "points = 'after-checkpoint:1,after-checkpoint:2'\nkills = 'real'\ncut = 'torn-seq'\n"
            "fs-ops = 2\nmodel-behaviour = 'respell'\njson = 'm.json'\nreport = 'm.html'\n",
        )
        result = killpoint(tmp_path, "matrix", "--quiet")
        assert result.returncode == 0, result.stderr
        cells = json.loads((tmp_path / "m.json").read_text())["cells"]
        assert len(cells) == 2
        for cell in cells:
            assert not any("traced worker (pid" in text for _, text, *_ in cell["timeline"])
