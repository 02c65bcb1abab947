"""Where cells keep their stores: RAM when there is room, the user's choice when given."""

# ruff: noqa: SIM300

from __future__ import annotations

import gc
import shutil
import subprocess
import sys
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


OWNER_SCRIPT = """
import sys, threading
from pathlib import Path
from killpoint.engine.work_root import make_work_root, mark_kept

class Campaign: pass
owner = Campaign()
root = make_work_root(owner, Path(sys.argv[1]))
(root / "00001-in-flight").mkdir()
(root / "00001-in-flight" / "store.db").write_text("x")
kept = root / "00002-kept"
kept.mkdir()
mark_kept(kept)
print(root, flush=True)
threading.Event().wait()
"""


def owning_process(parent: Path) -> tuple[subprocess.Popen[str], Path]:
    """A process that made a work folder with one cell in flight and one kept, and waits."""
    proc = subprocess.Popen(
        [sys.executable, "-c", OWNER_SCRIPT, str(parent)], stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None
    return proc, Path(proc.stdout.readline().strip())


def test_a_killed_campaigns_folders_are_swept_but_what_it_kept(tmp_path: Path) -> None:
    """SIGKILL leaves the work folder with its cells in flight: the next campaign in the
    same place removes those (and names them), never a kept one, never a live one's."""
    live, live_root = owning_process(tmp_path)
    dead, dead_root = owning_process(tmp_path)
    try:
        dead.kill()
        dead.wait()
        assert [dead_root / "00001-in-flight"] == work_root.sweep_orphans(tmp_path)
        assert (dead_root / "00002-kept").is_dir()
        assert not (dead_root / "00001-in-flight").exists()
        assert (live_root / "00001-in-flight" / "store.db").exists()
        assert [] == work_root.sweep_orphans(tmp_path)  # swept once
    finally:
        live.kill()
        live.wait()
    assert [live_root / "00001-in-flight"] == work_root.sweep_orphans(tmp_path)


def test_a_folder_with_nothing_kept_goes_whole(tmp_path: Path) -> None:
    dead, root = owning_process(tmp_path)
    dead.kill()
    dead.wait()
    shutil.rmtree(root / "00002-kept")
    assert [root / "00001-in-flight"] == work_root.sweep_orphans(tmp_path)
    assert not root.exists()


def test_an_engine_sweeps_where_it_makes_its_folder(tmp_path: Path) -> None:
    from killpoint.engine.engine import Engine
    from killpoint.engine.options import EngineConfig

    dead, root = owning_process(tmp_path)
    dead.kill()
    dead.wait()
    engine = Engine(EngineConfig(work_parent=tmp_path))
    assert [root / "00001-in-flight"] == engine.swept
    assert engine.work_root.parent == tmp_path and (engine.work_root / work_root.OWNER).exists()
