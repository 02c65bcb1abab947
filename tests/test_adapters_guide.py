"""docs/adapters.md cannot rot: its files are written into a fresh project outside the
repository (beside packages of the project's own named `runtime`, `scenarios` and
`harness`), and every command of its `sh` blocks runs there with the installed `killpoint`
and `pytest`, ending as the page says (0, or the status a `# exits N` comment names)."""

# ruff: noqa: SIM300
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
GUIDE = REPO / "docs" / "adapters.md"
FILE_BLOCK = re.compile(r'^```\w+ title="([^"]+)"\n(.*?)^```', re.S | re.M)
SH_BLOCK = re.compile(r"^```sh\n(.*?)^```", re.S | re.M)
EXITS = re.compile(r"\s+#\s*exits (\d+)\b.*$")

pytestmark = pytest.mark.slow


def guide_files(text: str) -> dict[str, str]:
    """Each named file: its blocks in page order, joined."""
    files: dict[str, list[str]] = {}
    for name, body in FILE_BLOCK.findall(text):
        files.setdefault(name, []).append(body)
    return {name: "\n".join(parts) for name, parts in files.items()}


def guide_commands(text: str) -> list[tuple[str, int]]:
    commands = []
    for block in SH_BLOCK.findall(text):
        for line in block.splitlines():
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            m = EXITS.search(line)
            commands.append((EXITS.sub("", line), int(m.group(1)) if m else 0))
    return commands


def test_the_page_has_the_runtime_the_adapter_a_test_and_commands() -> None:
    text = GUIDE.read_text()
    files = guide_files(text)
    assert {"tinyagent/__init__.py", "tinyagent/killpoint_adapter.py", "pytest.ini",
            "tests/test_crashes.py"} == set(files)  # fmt: skip
    adapter_lines = files["tinyagent/killpoint_adapter.py"].strip().count("\n") + 1
    assert 120 <= adapter_lines <= 200, adapter_lines  # "about 150 lines"
    ran = [c.split()[:2] for c, _ in guide_commands(text)]
    assert ["killpoint", "check-adapter"] in ran
    assert ["killpoint", "matrix"] in ran
    assert ["pytest", "-q"] in ran


def test_a_fresh_project_follows_the_guide(tmp_path: Path) -> None:
    project = tmp_path / "myproject"
    assert REPO not in project.parents
    text = GUIDE.read_text()
    for name, body in guide_files(text).items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    # Packages of the project's own that share names with killpoint's folders: importing
    # one of them instead of killpoint's would fail loudly.
    for own in ("runtime", "scenarios", "harness"):
        (project / own).mkdir()
        (project / own / "__init__.py").write_text(
            f"raise ImportError('the project own {own!r} package was imported')\n"
        )
    bin_dir = Path(sys.executable).parent
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{bin_dir}{os.pathsep}{env.get('PATH', '')}"
    # The fault run keeps its failed cells' folders, as a user's would: in a temporary
    # folder of the test's own (short: the forkserver's socket lives there), not in
    # /dev/shm, where they would hold memory after the test.
    env["TMPDIR"] = tempfile.mkdtemp(prefix="kpg-", dir="/tmp")
    try:
        for command, status in guide_commands(text):
            result = subprocess.run(
                command, shell=True, cwd=project, env=env, capture_output=True, text=True,
                timeout=600,
            )  # fmt: skip
            assert status == result.returncode, f"{command}\n{result.stdout}\n{result.stderr}"
            if command.startswith("killpoint check-adapter"):
                assert "every check passed" in result.stdout
                assert 8 == sum(line.startswith("PASS  ") for line in result.stdout.splitlines())
    finally:
        shutil.rmtree(env["TMPDIR"], ignore_errors=True)
    reports = project / "reports"
    document = json.loads((reports / "tinyagent.killpoint_adapter-adapter-matrix.json").read_text())
    assert 0 == document["summary"]["unexpected"]
    assert 28 == document["summary"]["cells"]  # the figure the page gives
    faults = json.loads((reports / "tiny-faults.json").read_text())
    kinds = {f["kind"] for c in faults["cells"] for f in c["findings"]}
    assert {"two-drivers", "effect-duplicated"} <= kinds


def history_snippet(text: str) -> str:
    """The `instrument` the page's 'Reporting the run's history' shows (a block of no file:
    the page's own adapter reports no facts)."""
    section = text.split("## Reporting the run's history", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"^```python\n(.*?)^```", section, re.S | re.M)
    return block


def test_the_history_snippet_runs_against_the_guides_runtime(tmp_path: Path) -> None:
    """Its `facts` read what the guide's tinyagent.Run has: a checkpoint through the
    snippet's `instrument` records the run's id and status in the history."""
    for name, body in guide_files(GUIDE.read_text()).items():
        if name.startswith("tinyagent/"):
            path = tmp_path / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body)
    (tmp_path / "snippet.py").write_text(
        "from killpoint import CheckpointGates\n"
        "import tinyagent\n\n" + history_snippet(GUIDE.read_text())
    )
    script = (
        "import sys, snippet, tinyagent\n"
        "from killpoint import CheckpointGates\n"
        "from killpoint.scenarios import history\n"
        "history.configure(sys.argv[1])\n"
        "snippet.instrument(None, CheckpointGates())\n"
        "tinyagent.Store(sys.argv[2]).save(tinyagent.Run('r1', 's1'))\n"
    )
    events = tmp_path / "history.jsonl"
    result = subprocess.run(
        [sys.executable, "-c", script, str(events), str(tmp_path / "store.db")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert 0 == result.returncode, result.stderr
    written = [json.loads(line) for line in events.read_text().splitlines()]
    assert [("write", "r1", "RUNNING"), ("committed", "r1", "RUNNING")] == [
        (e["event"], e["run_id"], e["status"]) for e in written
    ]
