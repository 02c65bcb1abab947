"""What the documentation tests share: reading a page's commands and files, and a
virtualenv with killpoint installed from a wheel, not editable, as a user installs it.

A page marks what a test runs:

- a ```` ```sh ```` block: commands, one a line (`\\` continues a line); a `# exits N`
  comment gives the status the command ends with (0 otherwise);
- a ```` ```python title="path/in/project.py" ```` block (any language): a file the reader
  writes, at that path in their project; blocks with the same title are joined in order;
- `<!-- not run: why -->` on the line before a block: the block is shown, not run (it
  needs the network, a cloud, hours). Such a block is still checked for names that exist.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

REPO = Path(__file__).resolve().parents[1]
FENCE = re.compile(
    r"^(?P<skip><!-- not run: [^>]*-->\n)?```(?P<lang>[\w-]*)(?P<attrs>[^\n]*)\n(?P<body>.*?)^```",
    re.S | re.M,
)
TITLE = re.compile(r'title="([^"]+)"')
EXITS = re.compile(r"\s+#\s*exits (\d+)\b.*$")
# The folders that install as `killpoint` (pyproject.toml's package-dir), and what a wheel
# build needs beside them.
SOURCES = ("harness", "runtime", "scenarios", "pyproject.toml", "README.md")


@dataclass(frozen=True)
class Command:
    line: str
    status: int  # what it must exit with


def commands(text: str, *, runnable_only: bool = False) -> list[Command]:
    """Each command of the page's `sh` blocks, comments and continuations folded."""
    found = []
    for m in FENCE.finditer(text):
        if m["lang"] != "sh" or (runnable_only and m["skip"]):
            continue
        for line in m["body"].replace("\\\n", " ").splitlines():
            status = EXITS.search(line)
            line = EXITS.sub("", line)
            line = re.sub(r"\s+#( .*)?$", "", line).strip()
            if line and not line.startswith("#"):
                found.append(Command(line, int(status.group(1)) if status else 0))
    return found


def files(text: str) -> dict[str, str]:
    """The page's files by path: every block with a title, joined in page order."""
    found: dict[str, list[str]] = {}
    for m in FENCE.finditer(text):
        title = TITLE.search(m["attrs"])
        if title and not m["skip"]:
            found.setdefault(title.group(1), []).append(m["body"])
    return {name: "\n".join(parts) for name, parts in found.items()}


def write_files(text: str, project: Path) -> list[Path]:
    written = []
    for name, body in files(text).items():
        path = project / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
        written.append(path)
    return written


def generator() -> ModuleType:
    """docs/generate.py, the reference pages' generator (a script, not a package)."""
    spec = importlib.util.spec_from_file_location("docs_generate", REPO / "docs" / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("docs_generate", module)  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def purelib(python: Path) -> Path:
    out = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    return Path(out.stdout.strip())


def installed_killpoint(root: Path) -> Path:
    """A virtualenv under `root` with killpoint installed from a wheel (not editable); its
    dependencies come from this interpreter's environment, after its own packages, so
    nothing is downloaded. Returns the virtualenv's folder."""
    source = root / "src"  # a copy: a build leaves build/ and egg-info behind
    for name in SOURCES:
        path = REPO / name
        if path.is_dir():
            shutil.copytree(path, source / name, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            shutil.copy(path, source / name)
    dist = root / "dist"
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(dist), str(source)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    (wheel,) = dist.glob("killpoint-*.whl")
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    # The environment's packages, linked one by one without its own killpoint, on a plain
    # path line (which runs no .pth of that folder).
    deps = root / "dependencies"
    deps.mkdir()
    for entry in Path(sysconfig.get_path("purelib")).iterdir():
        if not entry.name.startswith(("killpoint", "__editable__")):
            (deps / entry.name).symlink_to(entry)
    (purelib(python) / "test-dependencies.pth").write_text(f"{deps}\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "--no-deps", "-q",
         str(wheel)],
        check=True, capture_output=True, timeout=300,
    )  # fmt: skip
    # The script pip would have written for a dependency it was told not to install.
    (entry,) = importlib.metadata.entry_points(group="console_scripts", name="pytest")
    script = venv / "bin" / "pytest"
    script.write_text(
        f"#!{python}\nimport sys\nfrom {entry.module} import {entry.attr}\n\n"
        f"if __name__ == '__main__':\n    sys.exit({entry.attr}())\n"
    )
    script.chmod(0o755)
    return venv


def environment(venv: Path, tmp: Path) -> dict[str, str]:
    """A reader's shell: the virtualenv's commands first, no PYTHONPATH of the test
    session's, a temporary folder of the test's own (short: the forkserver's socket lives
    there; kept cells land there instead of /dev/shm)."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    env["PATH"] = f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}"
    env["VIRTUAL_ENV"] = str(venv)
    env["TMPDIR"] = str(tmp)
    env["NO_COLOR"] = "1"
    return env


def run(command: Command, cwd: Path, env: dict[str, str], timeout: float = 600) -> str:
    """Run one command in bash; fail naming it, its status and its output."""
    result = subprocess.run(
        ["bash", "-c", command.line], cwd=cwd, env=env, capture_output=True, text=True,
        timeout=timeout,
    )  # fmt: skip
    output = result.stdout + result.stderr
    assert command.status == result.returncode, (
        f"`{command.line}` exited {result.returncode}, the page says {command.status}:\n{output}"
    )
    return output
