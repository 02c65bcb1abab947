"""Hostile run content through every face of the `killpoint` command, under GitHub
Actions: no line of its output (standard output or error) is one a runner would read as
a workflow command, but killpoint's own `::error` annotations; no terminal control
sequence reaches either stream raw; and the hostile text is there, shown escaped (so
each face is seen to print it).

The content comes from a runtime whose inspect() says it
(tests.harness.hostile_runtimes:Hostile) and from files someone else could have written
(a report given to `diff`, a shard given to `merge`, a corpus's manifest).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.harness.runner_commands import HOSTILE, MARKERS, commands, controls

REPO = Path(__file__).resolve().parents[3]
RUNTIME = "tests.harness.hostile_runtimes:Hostile"
ROW = ("--scenarios", "research", "--modes", "tool-batch", "--points", "after-checkpoint")
CELL = f"{RUNTIME}/research/tool-batch/sqlite/after-checkpoint:1"


def killpoint(cwd: Path, *args: str) -> subprocess.CompletedProcess[str]:
    # TMPDIR: the work folders (a failing cell kept by replay or search) in the test's own
    # folder, not in /dev/shm.
    env = {**os.environ, "GITHUB_ACTIONS": "true", "PYTHONPATH": str(REPO), "TMPDIR": str(cwd)}
    env.pop("GITHUB_STEP_SUMMARY", None)
    return subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", *args],
        cwd=cwd, env=env, capture_output=True, text=True, timeout=600,
        errors="surrogateescape",
    )  # fmt: skip


def own_annotation(line: str) -> bool:
    """killpoint's own `::error` annotation: its title, then its data escaped."""
    return line.startswith("::error title=killpoint") and "##[" not in line


def assert_inert(done: subprocess.CompletedProcess[str], *, shown: bool = True) -> str:
    """Nothing in either stream commands the runner or drives a terminal; with `shown`,
    the hostile text reached the output (escaped), so the face was tried."""
    text = done.stdout + "\n" + done.stderr
    assert [c for c in commands(text) if not own_annotation(c)] == [], text
    assert controls(text) == [], text
    if shown:
        assert any(m in text for m in MARKERS), text
    return text


@pytest.fixture(scope="module")
def matrix(
    tmp_path_factory: pytest.TempPathFactory,
) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """One small matrix of the hostile runtime, as a shard (1 of 1), its JSON kept."""
    folder = tmp_path_factory.mktemp("hostile")
    done = killpoint(
        folder, "matrix", "--runtime", RUNTIME, *ROW, "--workers", "2", "--keep", "none",
        "--shard", "1/1", "--seed", "7", "--json", "m.json", "--report", "m.html",
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    return folder, done


def test_matrix(matrix: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    """The summary, the groups, progress and the annotations."""
    _, done = matrix
    text = assert_inert(done)
    assert any(own_annotation(c) for c in commands(text))  # the annotation is still made


def test_replay(tmp_path: Path) -> None:
    """The timeline's `inspect:` and `verdict:` events hold the finding's sentence whole,
    its line breaks kept (a traceback reads as one), each line inert."""
    text = assert_inert(killpoint(tmp_path, "replay", CELL))
    assert "inspect: ok\n" + " " * 14 + "\\::add-mask::hunter2\n" in text


def test_check_adapter(tmp_path: Path) -> None:
    assert_inert(killpoint(tmp_path, "check-adapter", "--runtime", RUNTIME))


def test_demo(tmp_path: Path) -> None:
    assert_inert(killpoint(tmp_path, "demo", "--runtime", RUNTIME))


def test_search(tmp_path: Path) -> None:
    assert_inert(
        killpoint(tmp_path, "search", "--runtime", RUNTIME, "--max-examples", "2", "--depth", "1")
    )


def hostile_copy(document: dict[str, Any]) -> dict[str, Any]:
    """The report with its groups renamed to the hostile text (a file anyone could write)."""
    copy = json.loads(json.dumps(document))
    for group in copy["groups"]:
        group["key"] = f"{group['key']}:{HOSTILE}"
        group["path"] = HOSTILE
    return copy


def test_diff(matrix: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    """A report given to `diff` (a pull request's artefact): its group keys and sentences."""
    folder, _ = matrix
    document = json.loads((folder / "m.json").read_text())
    (tmp_path / "head.json").write_text(json.dumps(hostile_copy(document)))
    done = killpoint(tmp_path, "diff", str(folder / "m.json"), "head.json")
    assert done.returncode == 1, done.stderr
    assert_inert(done)


def test_merge(matrix: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    """A shard given to `merge`: its narrowing, shown in the merged summary."""
    folder, _ = matrix
    shard = json.loads((folder / "m.json").read_text())
    shard["narrowed"] = f"--points {HOSTILE}"
    (tmp_path / "s.json").write_text(json.dumps(shard))
    done = killpoint(tmp_path, "merge", "s.json", "-o", "all.json")
    assert done.returncode == 1, done.stderr
    assert_inert(done)


def test_merge_refusing_a_shard(
    matrix: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path
) -> None:
    """The refusal of a shard names what is wrong with it: here a cell id, the file's."""
    folder, _ = matrix
    shard = json.loads((folder / "m.json").read_text())
    cell = {**shard["cells"][0], "id": HOSTILE}
    shard["cells"] += [cell, cell]
    (tmp_path / "s.json").write_text(json.dumps(shard))
    done = killpoint(tmp_path, "merge", "s.json", "-o", "all.json")
    assert done.returncode == 2, done.stderr
    assert "is not a report killpoint wrote" in assert_inert(done)


def test_corpus(tmp_path: Path) -> None:
    """`corpus record` and `corpus check` of the hostile runtime: each state's sentence,
    and a manifest's library names (the corpus's own text) in the versions table."""
    done = killpoint(tmp_path, "corpus", "record", "--runtime", RUNTIME, *ROW, "--out", "c")
    assert done.returncode == 0, done.stderr
    manifest = json.loads((tmp_path / "c" / "corpus.json").read_text())
    manifest["versions"]["libraries"][HOSTILE] = HOSTILE
    (tmp_path / "c" / "corpus.json").write_text(json.dumps(manifest))
    done = killpoint(tmp_path, "corpus", "check", "c", "--runtime", RUNTIME, "--report", "c.html")
    assert done.returncode == 0, done.stderr  # broken when recorded: not the upgrade's
    text = assert_inert(done)
    assert "broken-when-recorded" in text
    assert controls((tmp_path / "c.html").read_text()) == []


def test_a_refusal_names_hostile_input_inertly(tmp_path: Path) -> None:
    """A usage error quoting the file's own text (a state id in a manifest)."""
    (tmp_path / "c").mkdir()
    (tmp_path / "c" / "corpus.json").write_text(
        json.dumps({"schema": 1, "store": "sqlite", "states": [HOSTILE],
                    "versions": {"killpoint": "x", "python": "3", "runtime": "r", "libraries": {}}})
    )  # fmt: skip
    done = killpoint(tmp_path, "corpus", "check", "c")
    assert done.returncode == 2, done.stderr
    assert "is not a state id" in assert_inert(done)
