"""PowerLossFS through the kernel: the model's rules by real system calls on the mount,
and a mount's life (nothing left mounted, whatever happens to its owner)."""

# ruff: noqa: SIM300

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from killpoint.errors import CutError, MountBusy, MountFailed
from killpoint.powerloss import DURABLE, NOT_DURABLE, RESTORED, PowerLossFS, is_mounted
from killpoint.powerloss.availability import _device_problem
from tests.harness.powerloss.conftest import sync_dir, write


def image_of(folder: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


@pytest.fixture
def fs(cell: Path) -> PowerLossFS:
    with PowerLossFS(cell / "backing", cell / "store") as fs:
        yield fs


class TestRulesThroughTheKernel:
    def test_content_is_as_of_the_last_fsync(self, fs: PowerLossFS) -> None:
        """Rule 1: what an fsync (then an fdatasync) covered survives, the write after the
        last sync does not."""
        f = fs.mountpoint / "f"
        write(f, b"synced", sync=True)
        sync_dir(fs.mountpoint)
        write(f, b"+more", offset=6)
        fd = os.open(f, os.O_RDWR)
        os.pwrite(fd, b"S", 0)
        os.fdatasync(fd)
        os.close(fd)
        write(f, b"!", offset=0)

        report = fs.cut()
        fs.unmount()

        assert {"f": b"Synced+more"} == image_of(fs.mountpoint)
        assert (DURABLE, 11, 1, 2) == (
            report.files["f"].entry,
            report.files["f"].synced_bytes,
            report.files["f"].lost_bytes,
            report.files["f"].syncs,
        )

    def test_o_sync_writes_are_synced_as_written(self, fs: PowerLossFS) -> None:
        """Rule 1: a handle opened O_SYNC (or O_DSYNC) makes each write durable."""
        fd = os.open(fs.mountpoint / "f", os.O_RDWR | os.O_CREAT | os.O_DSYNC, 0o644)
        os.write(fd, b"dsync")
        os.close(fd)
        sync_dir(fs.mountpoint)

        fs.cut()
        fs.unmount()

        assert {"f": b"dsync"} == image_of(fs.mountpoint)

    def test_entries_are_as_of_the_last_directory_sync(self, fs: PowerLossFS) -> None:
        """Rule 2: a file created and synced without a directory sync is gone; an unlink
        and a rename without one are undone."""
        for name in ("kept", "unlinked", "renamed"):
            write(fs.mountpoint / name, name.encode(), sync=True)
        sync_dir(fs.mountpoint)
        write(fs.mountpoint / "created", b"created", sync=True)
        os.unlink(fs.mountpoint / "unlinked")
        os.rename(fs.mountpoint / "renamed", fs.mountpoint / "moved")

        report = fs.cut()
        fs.unmount()

        assert {"kept": b"kept", "renamed": b"renamed", "unlinked": b"unlinked"} == image_of(
            fs.mountpoint
        )
        assert {
            "created": NOT_DURABLE,
            "kept": DURABLE,
            "moved": NOT_DURABLE,
            "renamed": RESTORED,
            "unlinked": RESTORED,
        } == {path: f.entry for path, f in report.files.items()}

    def test_a_truncation_waits_for_the_next_sync(self, fs: PowerLossFS) -> None:
        """Rule 3: ftruncate without a sync is undone; with one, it holds."""
        write(fs.mountpoint / "a", b"0123456789", sync=True)
        write(fs.mountpoint / "b", b"0123456789", sync=True)
        sync_dir(fs.mountpoint)
        os.truncate(fs.mountpoint / "a", 3)
        fd = os.open(fs.mountpoint / "b", os.O_RDWR)
        os.ftruncate(fd, 3)
        os.fsync(fd)
        os.close(fd)

        fs.cut()
        fs.unmount()

        assert {"a": b"0123456789", "b": b"012"} == image_of(fs.mountpoint)

    def test_torn_mode_keeps_a_prefix_of_the_newest_unsynced_write(self, fs: PowerLossFS) -> None:
        """Rule 5: with torn-op at byte units, a prefix of the newest unsynced write lands."""
        write(fs.mountpoint / "f", b"base", sync=True)
        sync_dir(fs.mountpoint)
        write(fs.mountpoint / "f", b"0123456789", offset=4)

        report = fs.cut(model="torn-op:byte")
        fs.unmount()

        torn = report.files["f"].torn_bytes
        assert 0 < torn < 10
        assert {"f": b"base" + b"0123456789"[:torn]} == image_of(fs.mountpoint)

    def test_what_the_backing_held_at_mount_is_durable(self, cell: Path) -> None:
        """The backing folder's files at mount are the starting durable state (a second
        power-loss mount over the image of a first)."""
        (cell / "backing").mkdir()
        (cell / "backing" / "f").write_bytes(b"before")
        with PowerLossFS(cell / "backing", cell / "store") as fs:
            write(fs.mountpoint / "f", b"AFTER!")
            fs.cut()
            fs.unmount()

        assert {"f": b"before"} == image_of(cell / "store")


class TestLife:
    def test_leaving_the_block_on_an_exception_unmounts(self, cell: Path) -> None:
        """An exception inside the `with` block unmounts, and the server exits."""
        with pytest.raises(RuntimeError), PowerLossFS(cell / "backing", cell / "store") as fs:
            write(fs.mountpoint / "f", b"x")
            raise RuntimeError("boom")

        assert (False, False) == (is_mounted(fs.mountpoint), fs.mounted)

    def test_an_open_file_makes_unmount_name_its_holder(self, cell: Path) -> None:
        """unmount() refuses while this process holds a file, naming the pid and the path;
        close() then detaches anyway."""
        with PowerLossFS(cell / "backing", cell / "store", timeout=0.5) as fs:
            held = open(fs.mountpoint / "held", "wb")  # noqa: SIM115
            try:
                with pytest.raises(MountBusy) as busy:
                    fs.unmount()
                fs.close()
                assert False is is_mounted(fs.mountpoint)
            finally:
                with contextlib.suppress(OSError):  # dead since close(): ECONNABORTED
                    held.close()

        assert f"{os.getpid()} (" in str(busy.value)
        assert str(fs.mountpoint / "held") in str(busy.value)

    def test_unmount_waits_for_a_file_this_process_is_closing(
        self, cell: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A file of this process still open at the first try (another thread closing a
        pooled connection) is waited for: the unmount succeeds once it is closed, and the
        mountpoint holds the image."""
        from killpoint.powerloss import mount as mount_mod

        with PowerLossFS(cell / "backing", cell / "store") as fs:
            write(fs.mountpoint / "f", b"synced")
            held = open(fs.mountpoint / "held", "wb")  # noqa: SIM115
            seen: list[list[str]] = []
            real = mount_mod.holders

            def holders_then_close(mountpoint: Path) -> list[str]:
                found = real(mountpoint)
                seen.append(found)
                held.close()  # as the other thread would, right after the first refusal
                return found

            monkeypatch.setattr(mount_mod, "holders", holders_then_close)
            fs.cut()
            fs.unmount()
        assert seen and f"{os.getpid()} (" in seen[0][0]
        assert False is is_mounted(fs.mountpoint)

    def test_a_killed_owner_leaves_no_mount(self, cell: Path) -> None:
        """When the process that mounted is SIGKILLed, its server unmounts and exits."""
        code = textwrap.dedent(
            f"""
            import sys
            from pathlib import Path
            from killpoint.powerloss import PowerLossFS
            fs = PowerLossFS(Path({str(cell / "backing")!r}), Path({str(cell / "store")!r}))
            (fs.mountpoint / "f").write_bytes(b"x")
            print(fs.server_pid, flush=True)
            sys.stdin.read()  # parked until killed
            """
        )
        owner = subprocess.Popen(
            [sys.executable, "-c", code], stdin=subprocess.PIPE, stdout=subprocess.PIPE
        )
        assert owner.stdout is not None
        server = int(owner.stdout.readline())
        # A pidfd turns readable when the server exits: no sleep, no polling of /proc.
        server_fd = os.pidfd_open(server)
        try:
            assert True is is_mounted(cell / "store")
            owner.send_signal(signal.SIGKILL)
            owner.wait()
            ready, _, _ = select.select([server_fd], [], [], 30)
        finally:
            os.close(server_fd)
            assert owner.stdin is not None
            owner.stdin.close()
            owner.stdout.close()

        assert [server_fd] == ready
        assert False is is_mounted(cell / "store")

    def test_a_mountpoint_with_files_is_refused(self, cell: Path) -> None:
        """The mountpoint must be empty: files there would be hidden, then lost."""
        (cell / "store").mkdir()
        (cell / "store" / "store.db").write_bytes(b"")

        with pytest.raises(MountFailed, match="is not empty; give an empty folder"):
            PowerLossFS(cell / "backing", cell / "store")

    def test_one_cut_per_mount(self, fs: PowerLossFS) -> None:
        """A second cut is refused: the power went once."""
        fs.cut()
        with pytest.raises(CutError, match="already cut"):
            fs.cut()
        fs.unmount()


class TestAvailability:
    def test_a_missing_device_is_the_reason(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """Without /dev/fuse the reason says so and how to provide it (the skip reason)."""
        from killpoint.powerloss import availability

        monkeypatch.setattr(availability, "FUSE_DEVICE", tmp_path / "fuse")

        assert (
            f"{tmp_path / 'fuse'} does not exist (load the fuse module: modprobe fuse; in a "
            "container, pass the device: --device /dev/fuse --cap-add SYS_ADMIN)"
        ) == _device_problem()
