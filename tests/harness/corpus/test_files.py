"""A corpus's files read as data: plain files only, each and each state within a size,
checked before a byte is read or copied; no link followed, no pipe or device opened."""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest

from killpoint.corpus import files
from killpoint.errors import CorpusError, Interrupted


def state(tmp_path: Path) -> Path:
    folder = tmp_path / "state"
    (folder / "model").mkdir(parents=True)
    (folder / "ledger.jsonl").write_text("{}\n")
    (folder / "model" / "turns.log").write_text("1 2\n")
    return folder


class TestSurvey:
    def test_lists_every_file_with_its_size(self, tmp_path: Path) -> None:
        assert files.survey(state(tmp_path)) == {"ledger.jsonl": 3, "model/turns.log": 4}

    def test_a_link_anywhere_is_refused(self, tmp_path: Path) -> None:
        """A link to /etc under model/ is refused before anything is read: never followed."""
        folder = state(tmp_path)
        os.symlink("/etc", folder / "model" / "etc")
        with pytest.raises(CorpusError, match=r"model/etc' is a symbolic link"):
            files.survey(folder)

    def test_a_link_to_a_file_inside_is_refused_too(self, tmp_path: Path) -> None:
        folder = state(tmp_path)
        os.symlink(folder / "ledger.jsonl", folder / "model" / "again")
        with pytest.raises(CorpusError, match="symbolic link"):
            files.survey(folder)

    def test_a_pipe_is_refused_without_opening_it(self, tmp_path: Path) -> None:
        """A FIFO would block the read that opens it: refused on its kind alone."""
        folder = state(tmp_path)
        os.mkfifo(folder / "ledger.fifo")
        with pytest.raises(CorpusError, match="not a plain file"):
            files.survey(folder)

    def test_a_sparse_gibibyte_is_refused_unread(self, tmp_path: Path) -> None:
        folder = state(tmp_path)
        with (folder / "ledger.jsonl").open("r+b") as f:
            f.truncate(1024**3)  # a hole: nothing written
        with pytest.raises(CorpusError, match=r"1024.0 MiB, over the 64.0 MiB"):
            files.survey(folder)

    def test_a_state_over_its_limit(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        folder = state(tmp_path)
        monkeypatch.setattr(files, "STATE_BYTES", 5)
        with pytest.raises(CorpusError, match="the most a corpus state may hold"):
            files.survey(folder)

    def test_a_folder_of_many_files(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        folder = state(tmp_path)
        monkeypatch.setattr(files, "STATE_FILES", 2)
        with pytest.raises(CorpusError, match="more than 2 files"):
            files.survey(folder)

    def test_the_folder_itself_may_not_be_a_link(self, tmp_path: Path) -> None:
        os.symlink("/etc", tmp_path / "linked")
        with pytest.raises(CorpusError, match="symbolic link"):
            files.survey(tmp_path / "linked")


class TestRead:
    def test_inside_refuses_a_linked_component(self, tmp_path: Path) -> None:
        (tmp_path / "states").symlink_to("/etc")
        with pytest.raises(CorpusError, match="states' is a symbolic link"):
            files.inside(tmp_path, "states", "passwd")
        with pytest.raises(CorpusError, match="not a name inside it"):
            files.inside(tmp_path, "..")

    def test_a_linked_file_is_not_opened(self, tmp_path: Path) -> None:
        (tmp_path / "corpus.json").symlink_to("/etc/passwd")
        with pytest.raises(CorpusError, match="symbolic link"):
            files.read_bytes(tmp_path / "corpus.json")

    def test_a_device_is_not_read(self, tmp_path: Path) -> None:
        with pytest.raises(CorpusError, match="not a plain file"):
            files.read_bytes(Path("/dev/zero"))

    def test_a_file_over_the_limit_is_refused_before_reading(self, tmp_path: Path) -> None:
        big = tmp_path / "big"
        with big.open("wb") as f:
            f.truncate(10 * 1024**3)
        with pytest.raises(CorpusError, match="over the"):
            files.read_bytes(big)
        with pytest.raises(CorpusError, match="over the"):
            list(files.read_lines(big))


class TestCopy:
    def test_a_copy_is_bounded_and_whole(self, tmp_path: Path) -> None:
        source = state(tmp_path)
        assert files.copy_tree(source / "model", tmp_path / "out") == 4
        assert (tmp_path / "out" / "turns.log").read_text() == "1 2\n"

    def test_a_copy_stops_at_ctrl_c_and_leaves_no_file(self, tmp_path: Path) -> None:
        source = tmp_path / "ledger.jsonl"
        source.write_bytes(b"x" * (3 * files.CHUNK))
        stop = threading.Event()
        stop.set()
        with pytest.raises(Interrupted):
            files.copy_file(source, tmp_path / "copy", stop=stop)
        assert not (tmp_path / "copy").exists()

    def test_a_copy_over_the_limit_leaves_no_file(self, tmp_path: Path) -> None:
        source = tmp_path / "ledger.jsonl"
        source.write_bytes(b"x" * 100)
        with pytest.raises(CorpusError, match="over the"):
            files.copy_file(source, tmp_path / "copy", limit=10)
        assert not (tmp_path / "copy").exists()
