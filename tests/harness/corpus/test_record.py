"""`corpus record`: one state per kill that left something to resume, each a plain folder
(the store, the ledger, the model's state) with its size, and a manifest written last."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from killpoint.cli.main import main
from killpoint.corpus import manifest as mf
from killpoint.corpus.record import record
from killpoint.engine.options import CampaignConfig


def test_record_keeps_each_state(tmp_path: Path) -> None:
    """Each kill's state holds the rows the kill left (its checkpoints), the ledger and
    the model's stored responses; kills with nothing durable are counted, not kept."""
    config = CampaignConfig.from_options(
        scenarios=("research",), modes=("tool-batch",), points="after-checkpoint,mid-model",
        workers=2, keep="none",
    )  # fmt: skip
    done = record(config, tmp_path / "corpus")
    m = mf.read_manifest(tmp_path / "corpus")
    assert [s.id for s in done.states] == list(m.states)
    assert done.nothing_to_resume == ["reference/research/tool-batch/sqlite/mid-model:1"]
    for info in done.states:
        folder = tmp_path / "corpus" / mf.STATES / mf.folder_name(info.id)
        db = sqlite3.connect(folder / "store.db")
        try:
            held = db.execute("SELECT coalesce(sum(checkpoints), 0) FROM kp_runs").fetchone()[0]
        finally:
            db.close()
        assert held == info.checkpoints >= 1
        assert (folder / "ledger.jsonl").stat().st_size > 0
        assert any((folder / "model" / "responses").iterdir())
        assert info.bytes > 0 and info.recorded_verdict == "ok"
        assert (tmp_path / "corpus" / mf.BASELINES / info.baseline).exists()
    assert m.versions.runtime == "reference" and "SQLAlchemy" in m.versions.libraries
    assert not [p for p in tmp_path.iterdir() if p.name != "corpus"]  # no building folder left


def test_record_refuses_a_folder_in_use(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A corpus is never written over: one line, exit 2, nothing changed."""
    (tmp_path / "kept").write_text("x")
    assert main(["corpus", "record", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "exists and is not an empty folder" in err and err.count("\n") == 1
    assert (tmp_path / "kept").read_text() == "x"


def test_check_refuses_an_older_corpus(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A corpus of another schema: one line naming the version, exit 2."""
    (tmp_path / mf.MANIFEST).write_text('{"schema": 0, "versions": {"killpoint": "0.0.9"}}')
    assert main(["corpus", "check", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "schema 0" in err and "killpoint 0.0.9" in err and err.count("\n") == 1
