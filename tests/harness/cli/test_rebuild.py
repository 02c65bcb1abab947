"""A campaign killed before it wrote its reports: the journal beside its JSON holds every
cell that finished, and `killpoint report --from-journal` (or the next campaign that
writes the same JSON) rebuilds the reports from it."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from killpoint.cli import matrix as cli_matrix
from killpoint.cli.main import main
from killpoint.cli.output import console
from killpoint.report.journal import journal_path, read_journal
from killpoint.report.targets import Target
from tests.harness.cli.test_signals import campaign, short_tmp  # noqa: F401  (a fixture)
from tests.harness.report.test_journal import journal_of, result_of
from tests.harness.ticking_campaign import cell_lines

REPO = Path(__file__).resolve().parents[3]


def wait_until(ready: Callable[[], bool], what: str, timeout: float = 120) -> None:
    """Until `ready()` holds (a line written by another process), checked every 10 ms."""
    end = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < end, f"never: {what}"
        time.sleep(0.01)


@pytest.mark.slow
def test_sigkill_of_killpoint_loses_only_the_cells_in_flight(
    tmp_path: Path,
    short_tmp: Path,  # noqa: F811
) -> None:
    run = campaign(tmp_path, short_tmp, "--points", "all")
    journal = journal_path(run.json)
    try:
        run.ticks(2 * 3)  # the baselines ran
        wait_until(lambda: len(cell_lines(journal)) >= 3, "three cells in the journal")
        run.proc.send_signal(signal.SIGKILL)
    finally:
        run.finish()
    assert -signal.SIGKILL == run.proc.returncode
    assert not run.json.exists()
    finished = [c["cell"]["id"] for c in cell_lines(journal)]  # type: ignore[index]
    assert len(finished) >= 3
    done = subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "report", "--from-journal", str(journal)],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert 0 == done.returncode, done.stderr
    document = json.loads(run.json.read_text())
    assert document["interrupted"] is True
    assert sorted(finished) == sorted(c["id"] for c in document["cells"])
    assert document["summary"]["planned"] > len(finished)
    assert run.html.read_text().rstrip().endswith("</html>")
    assert not journal.exists()
    assert f"written: {run.json}, {run.html}" in done.stdout


def test_a_journal_whose_campaign_runs_is_not_rebuilt(tmp_path: Path) -> None:
    """The campaign holds its JSON's lock: the journal is live, and rebuilding it would
    race the campaign's own reports."""
    path = journal_of(tmp_path, result_of(2), end=False)
    live = Target(tmp_path / "m.json")
    live.check()
    live.lock()
    try:
        assert 2 == main(["report", "--from-journal", str(path)])
    finally:
        live.close()
    assert path.exists() and not (tmp_path / "m.json").exists()
    assert 0 == main(["report", "--from-journal", str(path)])
    assert 2 == len(json.loads((tmp_path / "m.json").read_text())["cells"])


def test_report_takes_a_json_or_a_journal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert 2 == main(["report"])
    assert 2 == main(["report", "x.json", "--from-journal", "x.journal.jsonl"])
    (tmp_path / "not.jsonl").write_text("{}\n")
    assert 2 == main(["report", "--from-journal", str(tmp_path / "not.jsonl")])
    lines = capsys.readouterr().err.strip().splitlines()
    assert 3 == len(lines), lines
    assert "is not a killpoint journal" in lines[2]


def test_the_next_campaign_rebuilds_a_journal_left_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Beside the JSON it is about to replace: the dead campaign's reports get names of
    their own, said on stderr, and the journal goes."""
    path = journal_of(tmp_path, result_of(3), end=False)
    pid = read_journal(path).pid
    json_target, html_target = Target(tmp_path / "m.json"), Target(tmp_path / "m.html")
    err = console(sys.stderr)
    cli_matrix.recover_left_behind(json_target, html_target, err)
    rebuilt = tmp_path / f"m.recovered-{pid}.json"
    assert 3 == len(json.loads(rebuilt.read_text())["cells"])
    assert (tmp_path / f"m.recovered-{pid}.html").exists()
    assert not path.exists()
    said = capsys.readouterr().err
    assert f"pid {pid} ended without writing its reports" in said
    assert str(rebuilt) in said


def naming(path: Path, json_name: str, *, rename: str | None = None) -> Path:
    """The journal at `path` with its first line's JSON name set to `json_name` (a journal
    anyone could have edited), moved to `rename` beside it if given."""
    first, rest = path.read_text().split("\n", 1)
    line = json.loads(first)
    line["json"] = json_name
    target = path.with_name(rename) if rename else path
    path.unlink()
    target.write_text(json.dumps(line) + "\n" + rest)
    return target


class TestWhereTheJournalSaysTheJsonGoes:
    """The JSON's name comes from the journal's first line: the rebuild writes only a new
    file or a killpoint report there, never the journal or someone else's file."""

    def test_an_existing_file_that_is_no_report_is_left_alone(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = naming(journal_of(tmp_path, result_of(2), end=False), "victim.txt")
        (tmp_path / "victim.txt").write_text("precious\n")
        assert 2 == main(["report", "--from-journal", str(path)])
        assert "precious\n" == (tmp_path / "victim.txt").read_text()
        assert not (tmp_path / "victim.html").exists()
        assert path.exists()
        err = capsys.readouterr().err.strip().splitlines()
        assert 1 == len(err), err
        assert "victim.txt" in err[0] and "is not a killpoint matrix report" in err[0]

    def test_the_journal_itself_is_not_written_over(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = naming(journal_of(tmp_path, result_of(2), end=False), "m.journal.jsonl")
        before = path.read_text()
        assert 2 == main(["report", "--from-journal", str(path)])
        assert before == path.read_text()
        assert "names itself as the JSON" in capsys.readouterr().err
        assert 2 == main(["report", "--from-journal", str(path), "-o", str(tmp_path / "x.html")])
        assert before == path.read_text()

    def test_the_journal_as_the_html_beside_the_json_takes_o(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        journal = journal_of(tmp_path, result_of(2), end=False)
        path = naming(journal, "twin.json", rename="twin.html")
        before = path.read_text()
        assert 2 == main(["report", "--from-journal", str(path)])
        assert before == path.read_text() and not (tmp_path / "twin.json").exists()
        assert "give -o" in capsys.readouterr().err
        assert 0 == main(["report", "--from-journal", str(path), "-o", str(tmp_path / "o.html")])
        assert 2 == len(json.loads((tmp_path / "twin.json").read_text())["cells"])
        assert (tmp_path / "o.html").read_text().rstrip().endswith("</html>")

    def test_an_existing_html_that_is_no_report_takes_o(self, tmp_path: Path) -> None:
        path = journal_of(tmp_path, result_of(2), end=False)
        (tmp_path / "m.html").write_text("<html>mine</html>\n")
        assert 2 == main(["report", "--from-journal", str(path)])
        assert "<html>mine</html>\n" == (tmp_path / "m.html").read_text()
        assert not (tmp_path / "m.json").exists()
        assert 0 == main(["report", "--from-journal", str(path), "-o", str(tmp_path / "o.html")])
        assert "<html>mine</html>\n" == (tmp_path / "m.html").read_text()

    def test_a_report_there_is_replaced_as_the_campaign_would_have(self, tmp_path: Path) -> None:
        """The usual case: the killed campaign was about to replace its last report."""
        path = journal_of(tmp_path, result_of(2), end=False)
        assert 0 == main(["report", "--from-journal", str(path)])
        path = journal_of(tmp_path, result_of(3), end=False)
        assert 0 == main(["report", "--from-journal", str(path)])
        assert 3 == len(json.loads((tmp_path / "m.json").read_text())["cells"])
        assert not path.exists()
