"""`killpoint corpus record|check` and `killpoint upgrade` as a user types them: the two
versions side by side, one line per state, the exit status, bad input in one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from killpoint.cli.main import main

SMALL = ("--modes", "tool-batch", "--points", "after-checkpoint", "--workers", "2")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("cli") / "corpus"
    assert main(["corpus", "record", "--scenarios", "research", *SMALL, "--out", str(out)]) == 0
    return out


def test_record_says_size_per_state(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "c"
    assert main(["corpus", "record", "--scenarios", "research", *SMALL, "--out", str(out)]) == 0
    said = capsys.readouterr().out
    assert "kept 4 states" in said and "per state)" in said


def test_check_shows_both_versions_and_each_state(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Under the recording code: every state ok, exit 0, the versions table first."""
    report = tmp_path / "r.json"
    assert main(["corpus", "check", str(corpus), "--json", str(report)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split() == ["recorded", "checked"]
    assert lines[1].split() == ["killpoint", "0.1.0", "0.1.0"]
    assert sum(1 for line in lines if line.startswith("ok ")) == 4
    assert lines[-2].endswith("4 ok")
    assert lines[-1] == f"written: {report}"
    assert json.loads(report.read_text())["counts"] == {"ok": 4}


def test_check_writes_a_page_of_both_versions(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """--report: the versions side by side, each group with its meaning, a row per state
    naming both scenario versions; a page with no script."""
    page = tmp_path / "check.html"
    argv = ["corpus", "check", str(corpus), "--scenario-version", "tool-renamed"]
    assert main([*argv, "--report", str(page)]) == 1
    assert capsys.readouterr().out.splitlines()[-1] == f"written: {page}"
    html = page.read_text()
    assert "<script" not in html
    assert "<tr><th></th><th>recorded</th><th>checked</th></tr>" in html
    assert html.count("diverged-after-upgrade</td>") == 1 + 3  # its group row, 3 states
    assert "research (version 1) → research@tool-renamed" in html
    for sid in json.loads((corpus / "corpus.json").read_text())["states"]:
        assert f'<td class="mono">{sid}</td>' in html


def test_a_report_that_cannot_be_written_is_refused_first(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A folder given as --report: exit 2 at once, in one line, nothing checked."""
    assert main(["corpus", "check", str(corpus), "--report", str(tmp_path)]) == 2
    captured = capsys.readouterr()
    assert "is a folder; give a file path" in captured.err and captured.out == ""


def test_a_breaking_version_exits_1(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A renamed tool diverges the states that hold its calls: exit 1, each line says so."""
    assert main(["corpus", "check", str(corpus), "--scenario-version", "tool-renamed"]) == 1
    out = capsys.readouterr().out
    assert out.count("diverged-after-upgrade ") == 3
    assert "[research (version 1) -> research@tool-renamed]" in out


def test_an_unknown_version_is_one_line(corpus: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["corpus", "check", str(corpus), "--scenario-version", "nope"]) == 2
    err = capsys.readouterr().err
    assert "has no version 'nope'" in err and err.count("\n") == 1


def test_upgrade_between_scenario_versions(capsys: pytest.CaptureFixture[str]) -> None:
    """Both steps in one command; a tool added resumes every state."""
    argv = ["upgrade", "--from", "research", "--to", "research@tool-added", *SMALL]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "kept 4 states" in out and out.rstrip().endswith("4 ok")


def test_upgrade_between_runtimes(capsys: pytest.CaptureFixture[str]) -> None:
    """Two adapters importable in one interpreter: a runtime that re-runs finished tools
    repeats the old worker's effects."""
    argv = ["upgrade", "--from", "reference", "--to", "tests.harness.upgrade_runtimes:rerunning",
            "--scenarios", "research", *SMALL]  # fmt: skip
    assert main(argv) == 1
    assert "4 effect-repeated-after-upgrade" in capsys.readouterr().out


def test_upgrade_refuses_a_runtime_against_a_scenario(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["upgrade", "--from", "reference", "--to", "research@tool-added"]) == 2
    err = capsys.readouterr().err
    assert "must both be runtimes or both scenario versions" in err and err.count("\n") == 1


class TestTampered:
    """A SQLite corpus someone else changed: refused with exit 2, naming the file, before
    anything is read or copied; nothing left in the work folder."""

    @staticmethod
    def tampered(corpus: Path, tmp_path: Path) -> tuple[Path, Path]:
        import shutil

        from killpoint.corpus import manifest as mf

        copy = tmp_path / "corpus"
        shutil.copytree(corpus, copy)
        sid = mf.read_manifest(copy).states[0]
        return copy, copy / mf.STATES / mf.folder_name(sid)

    def check(self, copy: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> str:
        work = tmp_path / "work"
        work.mkdir()
        code = main(["corpus", "check", str(copy), "--work-dir", str(work)])
        err = capsys.readouterr().err
        assert code == 2, err
        assert [p for p in work.rglob("*") if p.is_file()] == []
        return err

    def test_a_link_to_etc(
        self, corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        import os

        copy, state = self.tampered(corpus, tmp_path)
        (state / "model").mkdir(exist_ok=True)
        os.symlink("/etc", state / "model" / "etc")
        assert f"{state / 'model' / 'etc'}' is a symbolic link" in self.check(
            copy, tmp_path, capsys
        )

    def test_a_gibibyte_store(
        self, corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        copy, state = self.tampered(corpus, tmp_path)
        with (state / "store.db").open("r+b") as f:
            f.truncate(1024**3)  # sparse: nothing is written
        err = self.check(copy, tmp_path, capsys)
        assert "store.db' holds 1024.0 MiB, over the 64.0 MiB" in err

    def test_a_pipe_for_a_ledger(
        self, corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A FIFO would block forever the read that opens it: refused on sight."""
        import os

        copy, state = self.tampered(corpus, tmp_path)
        (state / "ledger.jsonl").unlink()
        os.mkfifo(state / "ledger.jsonl")
        assert "ledger.jsonl' is not a plain file" in self.check(copy, tmp_path, capsys)

    def test_a_state_folder_that_is_a_link(
        self, corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        import shutil

        copy, state = self.tampered(corpus, tmp_path)
        shutil.rmtree(state)
        state.symlink_to(tmp_path)
        assert "is a symbolic link" in self.check(copy, tmp_path, capsys)

    def test_a_file_no_state_holds(
        self, corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        copy, state = self.tampered(corpus, tmp_path)
        (state / "run.sh").write_text("#!/bin/sh\n")
        assert "run.sh' is not a file a corpus state holds" in self.check(copy, tmp_path, capsys)


def test_the_page_escapes_control_bytes(
    corpus: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A manifest's library names and versions are the corpus's: an ESC or BEL in them
    reaches neither the page nor the terminal raw."""
    import shutil

    copy = tmp_path / "corpus"
    shutil.copytree(corpus, copy)
    manifest = json.loads((copy / "corpus.json").read_text())
    manifest["versions"]["libraries"]["evil\x1b]0;pwned\x07\x1b[2J"] = "1\x1b[31m\x9b"
    (copy / "corpus.json").write_text(json.dumps(manifest))
    page = tmp_path / "check.html"
    assert main(["corpus", "check", str(copy), "--report", str(page)]) == 0
    html = page.read_text()
    out = capsys.readouterr().out
    for text in (html, out):
        assert not any(c in text for c in "\x1b\x07\x9b")
    assert "evil\\x1b]0;pwned\\x07\\x1b[2J" in html and "1\\x1b[31m\\x9b" in out
