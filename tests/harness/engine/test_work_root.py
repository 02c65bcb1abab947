"""Where cells keep their stores: RAM when there is room, the user's choice when given."""

from __future__ import annotations

import gc
import tempfile
from pathlib import Path

import pytest

from killpoint.engine import work_root
from killpoint.engine.work_root import check_work_dir, default_parent, make_work_root


@pytest.fixture
def no_tmpdir(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() caches its answer


def test_a_roomy_ram_folder_is_the_default(no_tmpdir: None, tmp_path: Path) -> None:
    assert tmp_path == default_parent(tmp_path)


def test_a_small_or_missing_ram_folder_is_passed_over(
    no_tmpdir: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    system_temp = Path(tempfile.gettempdir())
    assert system_temp == default_parent(tmp_path / "missing")
    monkeypatch.setattr(work_root, "RAM_MIN_FREE", 1 << 62)
    assert system_temp == default_parent(tmp_path)


def test_tmpdir_set_by_the_user_wins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chosen = tmp_path / "chosen"
    chosen.mkdir()
    monkeypatch.setenv("TMPDIR", str(chosen))
    monkeypatch.setattr(tempfile, "tempdir", None)
    assert chosen == default_parent(tmp_path)


class Owner:
    pass


def test_an_empty_work_root_goes_with_its_owner_a_used_one_stays(tmp_path: Path) -> None:
    empty_owner, used_owner = Owner(), Owner()
    empty = make_work_root(empty_owner, tmp_path)
    used = make_work_root(used_owner, tmp_path)
    (used / "kept-cell").mkdir()
    assert empty.parent == used.parent == tmp_path
    assert empty.name.startswith("killpoint-")
    del empty_owner, used_owner
    gc.collect()
    assert not empty.exists()
    assert (used / "kept-cell").is_dir()


def test_a_work_dir_is_created_and_checked(tmp_path: Path) -> None:
    check_work_dir(tmp_path / "a" / "b")
    assert not any((tmp_path / "a" / "b").iterdir())
    (tmp_path / "file").write_text("")
    with pytest.raises(OSError):
        check_work_dir(tmp_path / "file" / "sub")
