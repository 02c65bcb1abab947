"""How `killpoint matrix` ends, as a CI job sees it (a real process, no terminal):
progress lines on stderr, the JUnit file, GitHub's annotations and step summary, the
kept folders named with the command that removes them, and `written:` last; --quiet."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
BROKEN = "tests.harness.broken_adapters:Bracketed"  # its baseline raises: one run-failed cell

pytestmark = pytest.mark.slow


def matrix(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    # This suite may itself run under GitHub Actions: only the test that asks gets it.
    environ = {k: v for k, v in os.environ.items() if not k.startswith("GITHUB_")}
    environ.update({"PYTHONPATH": str(REPO), **env})
    return subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "matrix", "--scenarios", "research",
         "--modes", "tool-batch", "--work-dir", str(tmp_path),
         "--json", str(tmp_path / "m.json"), "--report", str(tmp_path / "m.html"), *args],
        cwd=tmp_path, capture_output=True, text=True, timeout=240, env=environ,
    )  # fmt: skip


class TestAPassingRun:
    def test_progress_lines_kept_folders_junit_and_written_last(self, tmp_path: Path) -> None:
        """Without a terminal: the plan and the counts on stderr; on stdout the kept
        folders with their size and `rm -rf`, then `written:` with the JUnit path, last."""
        result = matrix(
            tmp_path, "--points", "after-checkpoint:1,after-checkpoint:2", "--keep", "all",
            "--junit", str(tmp_path / "j.xml"),
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        err = result.stderr.splitlines()
        assert "killpoint: 2 cells planned" in err
        assert any(line.startswith("killpoint: 2/2 cells (100%), 0 unexpected,") for line in err)
        out = result.stdout.splitlines()
        assert (
            out[-1]
            == f"written: {tmp_path / 'm.json'}, {tmp_path / 'm.html'}, {tmp_path / 'j.xml'}"
        )
        kept = out[-2]
        assert kept.startswith("kept 2 cell folders in ")
        command = kept.partition("remove it with: ")[2]
        folders = [c["kept"] for c in json.loads((tmp_path / "m.json").read_text())["cells"]]
        assert all(Path(f).is_dir() for f in folders)
        subprocess.run(["sh", "-c", command], check=True)
        assert not any(Path(f).exists() for f in folders)
        cases = ET.parse(tmp_path / "j.xml").getroot().iter("testcase")
        assert {"killpoint.reference/research/tool-batch"} == {c.get("classname") for c in cases}

    def test_quiet_says_the_summary_line_and_written_only(self, tmp_path: Path) -> None:
        """--quiet: no header, no progress, no table."""
        result = matrix(tmp_path, "--points", "after-checkpoint:1", "--keep", "none", "--quiet")
        assert result.returncode == 0, result.stderr
        assert result.stderr == ""
        lines = result.stdout.splitlines()
        assert lines[0].startswith("1 cell, 0 unexpected")
        assert "crash matrix" not in result.stdout
        assert lines[-1].startswith("written: ")


class TestUnderGitHubActions:
    def test_annotations_and_a_step_summary(self, tmp_path: Path) -> None:
        """An unexpected group: one `::error` line on stdout, escaped; the step summary
        appended to, in Markdown; exit 1; `written:` still last."""
        summary = tmp_path / "summary.md"
        summary.write_text("earlier step\n")
        result = matrix(
            tmp_path, "--runtime", BROKEN, "--points", "after-checkpoint:1", "--keep", "none",
            GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary),
        )  # fmt: skip
        assert result.returncode == 1, result.stderr
        errors = [line for line in result.stdout.splitlines() if line.startswith("::error ")]
        assert len(errors) == 1
        assert errors[0].startswith(
            "::error title=killpoint%3A run-failed (run-failed)::run-failed: 1 cell%0A"
        )
        text = summary.read_text()
        assert text.startswith(
            "earlier step\n## killpoint crash matrix: tests\\.harness\\.broken\\_adapters:Bracketed"
        )
        assert "\\[bold\\]loud\\[/bold\\]" in text  # run content shown as text
        assert result.stdout.splitlines()[-1].startswith("written: ")

    def test_no_annotation_outside_github_actions(self, tmp_path: Path) -> None:
        """Another CI's log gets no workflow command."""
        result = matrix(
            tmp_path, "--runtime", BROKEN, "--points", "after-checkpoint:1", "--keep", "none"
        )
        assert result.returncode == 1
        assert "::error" not in result.stdout


class TestFailOn:
    def test_a_threshold_from_the_project_file_and_a_bad_one_refused(self, tmp_path: Path) -> None:
        """`fail-on` in [tool.killpoint] is checked as --fail-on would be."""
        (tmp_path / "pyproject.toml").write_text("[tool.killpoint]\nfail-on = 'severe'\n")
        result = matrix(tmp_path, "--points", "after-checkpoint:1")
        assert result.returncode == 2
        assert (
            f"killpoint: [tool.killpoint] fail-on in {tmp_path / 'pyproject.toml'}='severe': not a "
            "severity; choose from high, medium, low"
        ) == result.stderr.strip()

    def test_high_still_fails_on_a_run_failed_cell(self, tmp_path: Path) -> None:
        """A row whose run raised is of high severity: --fail-on high fails the run on it."""
        result = matrix(
            tmp_path, "--runtime", BROKEN, "--points", "after-checkpoint:1", "--keep", "none",
            "--fail-on", "high",
        )  # fmt: skip
        assert result.returncode == 1


@pytest.fixture(autouse=True)
def no_leftover_folders(tmp_path: Path) -> Iterator[None]:
    yield
    for folder in tmp_path.glob("killpoint-*"):
        shutil.rmtree(folder, ignore_errors=True)
