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
