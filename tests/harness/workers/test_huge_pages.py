"""The forkserver's heap on huge pages: which mappings are asked, and that the kernel takes
them where it can."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from killpoint.workers.huge_pages import HUGE, anonymous_ranges

MAPS = """\
7f0000000000-7f0000600000 rw-p 00000000 00:00 0
7f0000700000-7f0000800000 rw-p 00000000 00:00 0
55d000100000-55d000900000 rw-p 00000000 00:00 0                          [heap]
7f1000000000-7f1000400000 r--p 00000000 08:01 1234                       /usr/lib/libpython3.11.so.1.0
7f1000400000-7f1000800000 rw-p 00200000 08:01 1234                       /usr/lib/libpython3.11.so.1.0
7f2000000000-7f2000400000 r--p 00000000 00:00 0
7f3000000000-7f3000400000 rw-s 00000000 00:01 99                         /dev/shm/x
7ffd00000000-7ffd00400000 rw-p 00000000 00:00 0                          [stack]
"""


def test_only_private_writable_anonymous_memory_is_asked_in_whole_huge_pages() -> None:
    assert anonymous_ranges(MAPS) == [
        (0x7F0000000000, 0x7F0000600000),  # aligned at both ends: all of it
        (0x55D000200000, 0x55D000800000),  # [heap]: its huge-page-aligned middle
    ]  # 1 MiB mapping (too small), file-backed, read-only, shared and the stack: none


def test_an_unaligned_mapping_smaller_than_two_huge_pages_may_hold_none() -> None:
    start = 0x7F0000000000 + HUGE // 2
    maps = f"{start:x}-{start + 2 * HUGE:x} rw-p 00000000 00:00 0\n"
    assert anonymous_ranges(maps) == [(0x7F0000200000, 0x7F0000400000)]
    maps = f"{start:x}-{start + HUGE:x} rw-p 00000000 00:00 0\n"
    assert anonymous_ranges(maps) == []


def _thp_mode() -> str:
    path = Path("/sys/kernel/mm/transparent_hugepage/enabled")
    if not path.exists():
        return "absent"
    found = re.search(r"\[(\w+)\]", path.read_text())
    return found.group(1) if found else "absent"


def _kernel_at_least(major: int, minor: int) -> bool:
    found = re.match(r"(\d+)\.(\d+)", os.uname().release)
    return found is not None and (int(found[1]), int(found[2])) >= (major, minor)


needs_huge_pages = pytest.mark.skipif(
    _thp_mode() not in ("always", "madvise") or not _kernel_at_least(6, 1),
    reason="needs transparent huge pages (always or madvise) and MADV_COLLAPSE (Linux 6.1)",
)


@needs_huge_pages
def test_a_heap_collapsed_is_held_in_huge_pages() -> None:
    # In a fresh interpreter: collapsing is for the whole process.
    code = textwrap.dedent(
        """
        from killpoint.workers.huge_pages import collapse_heap

        def huge():
            with open("/proc/self/smaps_rollup") as f:
                line = next(l for l in f if l.startswith("AnonHugePages:"))
            return int(line.split()[1]) * 1024

        heap = [bytearray(4096) for _ in range(16384)]  # 64 MiB, touched
        before = huge()
        asked = collapse_heap()
        print(before, asked, huge())
        """
    )
    out = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    before, asked, after = (int(x) for x in out.stdout.split())
    assert asked >= 32 << 20
    assert after - before >= 16 << 20, (before, asked, after)


# In a fresh interpreter: the forkserver's preload is fixed once per process. It prints
# the huge pages its forkserver holds once a worker has come back from it.
FORKSERVER = """
import sys, tempfile, time
from pathlib import Path
from killpoint.workers import processes
from killpoint.workers.worker import WorkerSpec

def huge(pid):
    with open(f"/proc/{pid}/smaps_rollup") as f:
        return int(next(l for l in f if l.startswith("AnonHugePages:")).split()[1])

if __name__ == "__main__":
    processes.context()
    if sys.argv[1] == "asked":
        processes.use_huge_pages()  # after context(), before the first worker: still in time
    with tempfile.TemporaryDirectory() as tmp:
        spec = WorkerSpec("reference", "research", "tool", f"sqlite:///{tmp}/s.db", tmp, "s")
        done = processes.Worker(spec, [], 0.0).join(time.monotonic() + 120)
        assert done.kind == "done", done.detail
        print(huge(processes.forkserver_pid()))
    processes.stop_forkserver()
"""


def _forkserver_huge_kib(tmp_path: Path, asked: str) -> int:
    script = tmp_path / f"forkserver_{asked}.py"
    script.write_text(FORKSERVER)
    out = subprocess.run(
        [sys.executable, str(script), asked], check=True, capture_output=True, text=True
    )
    return int(out.stdout.split()[-1])


@needs_huge_pages
def test_a_forkserver_asked_for_huge_pages_holds_its_heap_in_them(tmp_path: Path) -> None:
    assert _forkserver_huge_kib(tmp_path, "asked") >= 16 << 10


@pytest.mark.skipif(
    _thp_mode() == "always", reason="with huge pages always on, the kernel may use them anyway"
)
def test_a_forkserver_not_asked_leaves_its_heap_as_it_is(tmp_path: Path) -> None:
    # What a campaign of a few cells gets: no collapse to pay for at its start.
    assert _forkserver_huge_kib(tmp_path, "not-asked") < 16 << 10
