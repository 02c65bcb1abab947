"""The kept folders named at the end: how many, their size, and a command that removes
them (run here, for real)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from killpoint.cli.kept import kept_note, shown_size, size_of


def kept(root: Path, n: int) -> list[str]:
    folders = []
    for k in range(n):
        folder = root / f"{k:05d}-cell"
        folder.mkdir(parents=True)
        (folder / "store.db").write_bytes(b"x" * 100_000)
        folders.append(str(folder))
    return folders


class TestNote:
    def test_names_count_size_and_a_command_that_removes_them(self, tmp_path: Path) -> None:
        """The command, run by a shell, removes the folders (a space in the path is quoted)."""
        root = tmp_path / "killpoint-a b"  # a space: the command quotes it
        folders = kept(root, 3)
        (root / "00000-baseline").mkdir()  # removed with them, so counted with them
        (root / "00000-baseline" / "store.db").write_bytes(b"x" * 300_000)
        note = kept_note(folders)
        assert note is not None
        assert 600_000 <= size_of(root) < 800_000
        assert note.startswith(
            f"kept 3 cell folders in {root}, which holds {shown_size(size_of(root))} with the "
            "baselines' folders;"
        )
        command = note.partition("remove it with: ")[2]
        assert f"rm -rf '{root}'" == command
        subprocess.run(["sh", "-c", command], check=True)
        assert not root.exists()

    def test_nothing_kept_says_nothing(self) -> None:
        """No folder kept, no line."""
        assert kept_note([]) is None

    def test_postgresql_names_the_schemas_too(self, tmp_path: Path) -> None:
        """A kept PostgreSQL cell's store is a schema on the server: said where to find its DROP."""
        note = kept_note(kept(tmp_path / "killpoint-x", 1), postgresql=True)
        assert note is not None and "store.txt names its schema" in note

    def test_size_counts_what_the_files_hold(self, tmp_path: Path) -> None:
        """Bytes on disk (or in RAM) of the files, shown in units."""
        kept(tmp_path, 2)
        assert 200_000 <= size_of(tmp_path) < 400_000
        assert [shown_size(n) for n in (999, 1500, 19_000_000)] == [
            "999 bytes",
            "1.5 kB",
            "19.0 MB",
        ]
