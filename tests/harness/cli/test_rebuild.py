"""A campaign killed before it wrote its reports: the journal beside its JSON holds every
cell that finished, and `killpoint report --from-journal` (or the next campaign that
writes the same JSON) rebuilds the reports from it."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
import os
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
from killpoint.engine.campaign import Campaign
from killpoint.report.document import head
from killpoint.report.journal import Journal, journal_path, read_journal
from killpoint.report.targets import Target
from tests.harness import failed_baseline
from tests.harness.cli.test_signals import campaign, short_tmp  # noqa: F401  (a fixture)
from tests.harness.report.test_journal import journal_of, result_of
from tests.harness.ticking_campaign import TICKING, TickingCampaign, cell_lines

REPO = Path(__file__).resolve().parents[3]


def wait_until(ready: Callable[[], bool], what: str, timeout: float = 120) -> None:
    """Until `ready()` holds (a line written by another process), checked every 10 ms."""
    end = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < end, f"never: {what}"
        time.sleep(0.01)


def rebuilt(journal: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    """`killpoint report --from-journal JOURNAL`, run as a user runs it."""
    return subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "report", "--from-journal", str(journal),
         *extra],
        cwd=REPO, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


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
    done = rebuilt(journal)
    assert 0 == done.returncode, done.stderr
    document = json.loads(run.json.read_text())
    assert document["interrupted"] is True
    assert sorted(finished) == sorted(c["id"] for c in document["cells"])
    assert document["summary"]["planned"] > len(finished)
    assert run.html.read_text().rstrip().endswith("</html>")
    assert not journal.exists()
    assert f"written: {run.json}, {run.html}" in done.stdout


@pytest.mark.slow
def test_a_journal_cut_before_the_last_baseline_keeps_the_rows_planned(
    tmp_path: Path,
    short_tmp: Path,  # noqa: F811
) -> None:
    """SIGKILL once the first row's cells run while the second row's baseline never
    ends (its first tool call never returns): the rebuilt report keeps the first row's
    plan, counts its cells not run, and shows the second row as never planned, as the
    campaign's own report would have."""
    blocking = "tests.harness.scenarios_for_tests:BLOCKING"
    run = campaign(tmp_path, short_tmp, "--points", "all", "--modes", "tool",
                   "--scenarios", f"{TICKING},{blocking}")  # fmt: skip
    journal = journal_path(run.json)
    try:
        wait_until(lambda: len(cell_lines(journal)) >= 1, "a cell in the journal")
        run.proc.send_signal(signal.SIGKILL)
    finally:
        run.finish()
    finished = cell_lines(journal)
    done = rebuilt(journal)
    assert 0 == done.returncode, done.stderr
    document = json.loads(run.json.read_text())
    first, second = document["planned_cells"]
    assert (TICKING, blocking) == (first["scenario"], second["scenario"])
    assert second["schedules"] is None, second
    assert {TICKING} == {c["scenario"] for c in document["cells"]}
    assert len(first["schedules"]) == document["summary"]["planned"] > len(finished)
    assert [TICKING] == [b["scenario"] for b in document["baselines"]]
    html = (tmp_path / "m.html").read_text()
    assert 1 == html.count("not run: the campaign stopped before this row")


@pytest.mark.slow
def test_a_journal_cut_in_the_first_baseline_names_every_row(
    tmp_path: Path,
    short_tmp: Path,  # noqa: F811
) -> None:
    """SIGKILL while every baseline is held in its first tool call, before any row was
    planned: the rebuilt report names both rows as never planned and the campaign as
    interrupted, as a Ctrl-C at the same moment does, not an empty report."""
    run = TickingCampaign(
        tmp_path,
        *("--timeout", "60", "--points", "all", "--modes", "tool,tool-batch"),
        env={"TMPDIR": str(short_tmp), "KILLPOINT_TEST_HOLD": "1"},
        new_session=True,
    )
    try:
        run.ticks(1)
        run.proc.send_signal(signal.SIGKILL)
    finally:
        run.finish()
    text = tmp_path / "m.txt"
    journal = journal_path(run.json)
    done = rebuilt(journal, "--text", str(text))
    assert 0 == done.returncode, done.stderr
    document = json.loads(run.json.read_text())
    assert [("tool", None), ("tool-batch", None)] == [
        (r["mode"], r["schedules"]) for r in document["planned_cells"]
    ]
    said = text.read_text()
    assert "not run: 2 rows whose cells were never planned (the campaign was interrupted)" in said


def test_a_journal_whose_campaign_runs_is_not_rebuilt(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
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
    said = capsys.readouterr().err
    assert "is still running" in said and "wait for it to end" in said, said
    assert path.exists() and not (tmp_path / "m.json").exists()
    assert 0 == main(["report", "--from-journal", str(path)])
    assert 2 == len(json.loads((tmp_path / "m.json").read_text())["cells"])


def test_the_lock_files_a_killed_campaign_left_go_with_the_rebuild(tmp_path: Path) -> None:
    """SIGKILL leaves `.m.json.lock` and `.m.html.lock` beside the JSON, unlocked (their
    holder is gone). The rebuild takes both locks, as a campaign does, and removes them as
    it lets them go; it never took the HTML's, whose file outlived the rebuilt reports."""
    path = journal_of(tmp_path, result_of(2), end=False)
    left = [tmp_path / ".m.json.lock", tmp_path / ".m.html.lock"]
    for lock in left:
        lock.write_text("pid 999999")
    assert 0 == main(["report", "--from-journal", str(path)])
    assert (tmp_path / "m.html").exists()
    assert [] == [p.name for p in left if p.exists()]


def test_a_campaign_writing_the_html_holds_off_the_rebuild(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Taking the HTML's lock keeps two writers of it apart: while a campaign writes the
    HTML given with -o, the rebuild is refused and writes nothing; then it runs."""
    path = journal_of(tmp_path, result_of(2), end=False)
    html = tmp_path / "o.html"
    live = Target(html)
    live.check()
    live.lock()
    try:
        assert 2 == main(["report", "--from-journal", str(path), "-o", str(html)])
    finally:
        live.close()
    said = capsys.readouterr().err
    assert f"-o: another killpoint campaign (pid {os.getpid()}) is writing" in said, said
    assert path.exists() and not (tmp_path / "m.json").exists() and not html.exists()
    assert not (tmp_path / ".m.json.lock").exists()  # let go with the refusal
    assert 0 == main(["report", "--from-journal", str(path), "-o", str(html)])
    assert html.exists() and not path.exists()


def test_report_of_a_saved_json_takes_the_html_lock(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`killpoint report m.json` writes the HTML under its lock as the rebuild does: while
    a campaign writes it, refused, nothing written; the lock file a killed campaign left
    beside it goes once the report is written."""
    assert 0 == main(["report", "--from-journal", str(journal_of(tmp_path, result_of(2)))])
    source, html = tmp_path / "m.json", tmp_path / "again.html"
    live = Target(html)
    live.check()
    live.lock()
    try:
        assert 2 == main(["report", str(source), "-o", str(html)])
    finally:
        live.close()
    said = capsys.readouterr().err
    assert f"another killpoint campaign (pid {os.getpid()}) is writing" in said, said
    assert not html.exists()
    stale = tmp_path / ".again.html.lock"
    stale.write_text("pid 999999")
    assert 0 == main(["report", str(source), "-o", str(html)])
    assert html.exists() and not stale.exists()


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


# -- the other formats: what `killpoint report` writes from a saved JSON -------------------

FORMATS = {"--junit": "r.xml", "--markdown": "r.md", "--text": "r.txt", "--annotations": "r.ann"}


@pytest.fixture(scope="module")
def left_journal(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The journal of a real campaign that ended without writing its reports (as one
    killed while writing them leaves it): a row whose baseline failed, so that every
    format has something to say of it."""
    folder = tmp_path_factory.mktemp("left")
    json_path = folder / "m.json"
    config = failed_baseline.config(folder / "work")
    camp = Campaign(config)
    top = head(config, camp.seed, camp.accepted, ["killpoint", "matrix"])
    journal = Journal(journal_path(json_path), json_path, top)
    journal.ended(camp.run(recorder=journal))
    journal.close()
    return journal.path


def copied(journal: Path, folder: Path) -> Path:
    """The journal, beside where its JSON goes in `folder` (each test rebuilds its own)."""
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / journal.name
    copy.write_bytes(journal.read_bytes())
    return copy


def test_every_format_asked_is_written_as_report_writes_it_from_the_json(
    left_journal: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--junit, --markdown, --text and --annotations with --from-journal: each file is
    what `killpoint report` writes from the rebuilt JSON, byte for byte, and each is in the
    `written:` line."""
    path = copied(left_journal, tmp_path / "rebuilt")
    asked = [arg for option, name in FORMATS.items() for arg in (option, str(tmp_path / name))]
    assert 0 == main(["report", "--from-journal", str(path), *asked])
    written = capsys.readouterr().out.strip().splitlines()[-1]
    json_path, html_path = path.parent / "m.json", path.parent / "m.html"
    paths = [json_path, html_path, *(tmp_path / name for name in FORMATS.values())]
    assert f"written: {', '.join(str(p) for p in paths)}" == written
    assert not path.exists()
    again = tmp_path / "from-json"
    again.mkdir()
    saved = [arg for option, name in FORMATS.items() for arg in (option, str(again / name))]
    assert 0 == main(["report", str(json_path), *saved])
    for name in FORMATS.values():
        assert (again / name).read_text() == (tmp_path / name).read_text(), name
    # What the formats say of the row whose baseline failed came through the journal.
    assert "not planned: 1 row whose baseline failed" in (tmp_path / "r.txt").read_text()
    assert 'name="sqlite/without-crash"' in (tmp_path / "r.xml").read_text()
    assert "::error " in (tmp_path / "r.ann").read_text()


@pytest.mark.parametrize(
    ("option", "where", "said"),
    [
        ("--junit", "m.journal.jsonl", "a path another report is written to"),
        ("--text", "m.json", "a path another report is written to"),
        ("--markdown", "m.html", "a path another report is written to"),
        ("--annotations", "a-folder", "is a folder; give a file path"),
        ("--junit", "a-file/r.xml", "a-file' is a file, not a folder; give a path in a folder"),
        ("-o", "a-folder", "is a folder; give a file path"),
        ("-o", "a-file/r.html", "a-file' is a file, not a folder; give a path in a folder"),
    ],
)
def test_a_format_that_cannot_be_written_there_refuses_the_rebuild_before_anything(
    left_journal: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    option: str,
    where: str,
    said: str,
) -> None:
    """One line naming the option and the fix, exit 2, and nothing written: no JSON, no
    HTML, not the format asked with a good path; the journal is left as it was."""
    path = copied(left_journal, tmp_path)
    (tmp_path / "a-folder").mkdir()
    (tmp_path / "a-file").write_text("not a folder")
    before = path.read_bytes()
    good = tmp_path / "good.xml" if option != "--junit" else tmp_path / "good.md"
    other = "--markdown" if option == "--junit" else "--junit"
    code = main(
        ["report", "--from-journal", str(path), other, str(good), option, str(tmp_path / where)]
    )
    assert 2 == code
    err = capsys.readouterr().err.strip().splitlines()
    assert 1 == len(err), err
    assert option in err[0] and said in err[0], err
    assert before == path.read_bytes()
    assert not (tmp_path / "m.json").exists() and not (tmp_path / "m.html").exists()
    assert not good.exists()


def test_a_diff_base_is_drawn_in_the_rebuilt_html_or_refused_before_anything(
    left_journal: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--diff-base as for a saved JSON: the page says what changed against it; a base of
    another runtime cannot be compared, and nothing is written."""
    base = tmp_path / "base"
    assert 0 == main(["report", "--from-journal", str(copied(left_journal, base))])
    path = copied(left_journal, tmp_path / "head")
    assert 0 == main(["report", "--from-journal", str(path), "--diff-base", str(base / "m.json")])
    assert 'id="diff"' in (path.parent / "m.html").read_text()
    other = json.loads((base / "m.json").read_text())
    other["runtime"] = "reference"
    (base / "other.json").write_text(json.dumps(other))
    path = copied(left_journal, tmp_path / "refused")
    capsys.readouterr()
    code = main(["report", "--from-journal", str(path), "--diff-base", str(base / "other.json")])
    assert 2 == code
    assert "compare two reports of one runtime" in capsys.readouterr().err
    assert path.exists() and not (path.parent / "m.json").exists()
    code = main(["report", "--from-journal", str(path), "--diff-base", str(base / "no.json")])
    assert 2 == code
    said = capsys.readouterr().err.strip()
    assert said.startswith("killpoint: --diff-base: cannot read"), said
    assert said.endswith("give the JSON of an earlier killpoint report"), said
    assert path.exists() and not (path.parent / "m.json").exists()
