"""Every command the documentation shows exists, and the tutorials and how-to guides run.

Two halves:

- every `sh` block of README.md and docs/**/*.md names what exists: a `killpoint` command
  line its parser accepts, `--crash-*` options the plugin declares, `-m` markers it
  registers, modules that import, make targets the Makefile has (fast);
- each tutorial and how-to page runs in a fresh project outside the repository, with
  killpoint installed from a wheel (not editable, tests/docs_pages.py): the page's files
  written, then its commands in order, each ending as the page says (slow).

Where a page shows a whole matrix (a how-to's `killpoint matrix`, `pytest --crash-matrix`),
the project narrows it, as a reader's own would: `[tool.killpoint]` and PYTEST_ADDOPTS
choose one scenario, one mode and the boundaries. Tutorials run as written, unnarrowed.
docs/adapters.md runs in tests/test_adapters_guide.py.
"""

# ruff: noqa: SIM300
from __future__ import annotations

import importlib.util
import json
import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from killpoint.cli.main import build_parser
from killpoint.plugin.keys import MATRIX_MARKER
from tests import docs_pages
from tests.docs_pages import Command, commands, environment, run, write_files

REPO = Path(__file__).resolve().parents[1]
PAGES = ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md"))]
TUTORIALS = ("docs/tutorials/your-agent.md", "docs/tutorials/failing-report.md")
HOW_TO = ("docs/how-to/ci.md", "docs/how-to/accept.md", "docs/upgrades.md")
# A page whose commands stand alone (each a pytest session of its own): one item per
# command, so xdist spreads them.
ONE_BY_ONE = "docs/plugin.md"
CASSETTES = "docs/how-to/cassettes.md"  # records and crash-tests in narrowed commands
# What the installed virtualenv stands for: a reader's own install steps.
INSTALL = (
    "python -m venv .venv",
    ". .venv/bin/activate",
    "python -m pip install '/path/to/killpoint[pytest]'",
)
NARROWED = {"scenarios": "research", "modes": "tool-batch", "points": "boundaries"}
OLD = "/tmp/old"  # the upgrades recipe's folder, put under the test's own


def shown(page: str) -> list[Command]:
    return commands((REPO / page).read_text())


ALL = [(page, c.line) for page in PAGES for c in shown(page)]


# -- every command names what exists --------------------------------------------------------


def test_the_pages_show_commands() -> None:
    assert {c.split()[0] for _, c in ALL} >= {"killpoint", "pytest", "make", "python"}


def killpoint_words(words: list[str]) -> list[str] | None:
    """The arguments of a `killpoint` command line, however it is started."""
    if words[0] == "killpoint":
        return words[1:]
    if words[0].endswith("python") and words[1:3] == ["-m", "killpoint.cli.main"]:
        return words[3:]
    return None


@pytest.mark.parametrize(("page", "command"), ALL, ids=[f"{p}:{c[:50]}" for p, c in ALL])
def test_each_command_names_what_exists(page: str, command: str) -> None:
    if "$(" in command or command.startswith((".", "export ")):
        return  # shell plumbing: run where its page runs
    words = shlex.split(command.replace("[", "").replace("]", ""))
    args = killpoint_words(words)
    if args is not None:
        try:
            build_parser().parse_args(args)
        except SystemExit as exc:
            if args == ["--version"] and exc.code == 0:
                return  # --version prints and exits 0, as argparse's version actions do
            pytest.fail(f"{page}: `{command}` is refused by killpoint's parser")
    elif words[0] == "pytest":
        known = {o.name for o in docs_pages.generator().pytest_options()}
        for word in words[1:]:
            if word.startswith("--crash-"):
                assert word.partition("=")[0] in known, f"{page}: {word} in `{command}`"
        if "-m" in words:
            assert words[words.index("-m") + 1] == MATRIX_MARKER, f"{page}: `{command}`"
    elif words[0] == "python" and words[1] == "-m" and words[2] not in ("venv", "pip"):
        assert importlib.util.find_spec(words[2]) is not None, f"{page}: `{command}`"
    elif words[0] == "make":
        targets = re.findall(r"^([a-z]+):", (REPO / "Makefile").read_text(), re.M)
        assert words[1] in targets, f"{page}: `{command}`"


def test_no_page_names_its_files_as_mkdocs_cannot_read() -> None:
    """`python file=x` breaks MkDocs' code fences (the rest of the page with them)."""
    for page in PAGES:
        assert not re.search(r"^```\w+ file=", (REPO / page).read_text(), re.M), page


# -- the pages run -----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return docs_pages.installed_killpoint(tmp_path_factory.mktemp("kp-install"))


@pytest.fixture
def shell(installed: Path, tmp_path: Path) -> Iterator[dict[str, str]]:
    # Short: the forkserver's socket lives in TMPDIR.
    tmp = Path(subprocess.check_output(["mktemp", "-d", "/tmp/kpd-XXXXXX"], text=True).strip())
    try:
        yield environment(installed, tmp)
    finally:
        subprocess.run(["rm", "-rf", str(tmp)], check=False)


def run_page(page: str, project: Path, env: dict[str, str], only: int | None = None) -> list[str]:
    """The page's files written into `project`, then its commands run there, in order
    (`only`: its command of that index alone)."""
    text = (REPO / page).read_text()
    write_files(text, project)
    outputs = []
    for n, command in enumerate(commands(text, runnable_only=True)):
        if only is not None and n != only:
            continue
        if command.line in INSTALL:
            continue
        line = command.line.replace(OLD, str(project / "old"))
        outputs.append(run(Command(line, command.status), project, env))
    return outputs


def narrow(project: Path, env: dict[str, str]) -> None:
    """A reader's project that chose a small matrix, for the CLI and for pytest."""
    table = "".join(f'{k} = "{v}"\n' for k, v in NARROWED.items())
    (project / "pyproject.toml").write_text(f"[tool.killpoint]\n{table}")
    env["PYTEST_ADDOPTS"] = " ".join(f"--crash-{k} {v}" for k, v in NARROWED.items())


@pytest.mark.slow
def test_the_tutorials_run_in_a_project_of_their_own(shell: dict[str, str], tmp_path: Path) -> None:
    """Crash-test your agent, then reading a failing report: one project, in order, with
    killpoint installed as the first page says."""
    text = (REPO / TUTORIALS[0]).read_text()
    assert set(INSTALL) <= {c.line for c in commands(text)}
    project = tmp_path / "myproject"
    project.mkdir()
    first, second = (run_page(page, project, shell) for page in TUTORIALS)
    assert "12 cells, 0 unexpected" in first[0]
    assert "1 passed" in first[0]
    assert (project / "reports" / "myagent.agent-build-matrix.html").exists()
    assert "effect-duplicated (tool charge_card)" in second[0]
    assert "duplicated (UNEXPECTED)" in second[1]
    assert "reproduced" in second[1]


@pytest.mark.slow
def test_the_first_matrix_tutorial_runs(shell: dict[str, str], tmp_path: Path) -> None:
    outputs = run_page("docs/tutorials/first-matrix.md", tmp_path, shell)
    assert "Replay this cell: killpoint replay" in outputs[0]
    assert "63 cells, 0 unexpected" in outputs[2]
    assert "reproduced" in outputs[-1]


@pytest.mark.slow
def test_the_readme_agent_runs_in_a_project_of_its_own(
    shell: dict[str, str], tmp_path: Path
) -> None:
    """The README's twenty lines: each python block starts with the path it goes to."""
    text = (REPO / "README.md").read_text()
    blocks = re.findall(r"^```python\n# (\S+)\n(.*?)^```", text, re.S | re.M)
    assert {"myagent/agent.py", "tests/test_crashes.py"} == {path for path, _ in blocks}
    assert 25 >= sum(body.count("\n") + 1 for _, body in blocks)
    for path, body in blocks:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(body)
    (tmp_path / "myagent" / "__init__.py").write_text("")
    (tmp_path / "pytest.ini").write_text("[pytest]\npythonpath = .\n")
    output = run(Command("pytest -q", 0), tmp_path, shell)
    assert "12 cells, 0 unexpected" in output


@pytest.mark.slow
@pytest.mark.parametrize("page", HOW_TO)
def test_each_how_to_runs(page: str, shell: dict[str, str], tmp_path: Path) -> None:
    narrow(tmp_path, shell)
    outputs = run_page(page, tmp_path, shell)
    assert outputs, page


@pytest.mark.slow
def test_the_cassettes_guide_runs(shell: dict[str, str], tmp_path: Path) -> None:
    """Record agno, LangGraph and an agent of one's own against the stand-in, crash-test
    each from its cassette, then from pytest: the page's commands are narrowed already."""
    outputs = run_page(CASSETTES, tmp_path, shell)
    assert 7 == len(outputs)
    assert all("recorded 5 model requests" in outputs[n] for n in (0, 2, 4))
    assert "4 cells, 3 unexpected from 1 cause" in outputs[1]
    assert "tool-executions-lost" in outputs[1]
    assert "20 cells, 0 unexpected" in outputs[3]
    assert "4 cells, 0 unexpected" in outputs[5]
    assert "1 passed" in outputs[6] and "4 cells, 0 unexpected" in outputs[6]
    cassettes = sorted((tmp_path / "cassettes").glob("*.json"))
    assert 3 == len(cassettes)
    assert not any("sk-stand-in" in c.read_text() for c in cassettes)
    assert (tmp_path / "sandbox" / "fetched.txt").exists()


@pytest.mark.slow
@pytest.mark.parametrize(
    "index", range(len(commands((REPO / ONE_BY_ONE).read_text(), runnable_only=True)))
)
def test_each_plugin_command_runs(index: int, shell: dict[str, str], tmp_path: Path) -> None:
    narrow(tmp_path, shell)
    (output,) = run_page(ONE_BY_ONE, tmp_path, shell, only=index)
    assert re.search(r"\d+ passed", output), output


@pytest.mark.slow
@pytest.mark.postgres
def test_the_postgresql_guide_runs(shell: dict[str, str], tmp_path: Path, pg_url: str) -> None:
    narrow(tmp_path, shell)
    shell["KILLPOINT_STORE"] = pg_url
    outputs = run_page("docs/how-to/postgresql.md", tmp_path, shell)
    assert any("cells, 0 unexpected" in output for output in outputs)
    password = re.search(r"//[^:/@]+:([^@]+)@", pg_url)
    for output in outputs:
        assert password is None or password.group(1) not in output


def recipe(page: str = "docs/upgrades.md") -> list[Command]:
    """The upgrades recipe: its commands that make and use the older release's folder."""
    return [c for c in commands((REPO / page).read_text(), runnable_only=True) if OLD in c.line]


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["editable", "installed"])
def test_the_upgrades_recipe_reaches_killpoint_for_either_install(
    kind: str, installed: Path, tmp_path: Path
) -> None:
    """An older release's folder sees the project's environment after its own packages,
    whether killpoint is installed editable (make's .venv) or from a wheel."""
    venv = Path(sys.prefix) if kind == "editable" else installed
    env = environment(venv, tmp_path)
    old = tmp_path / "old"
    steps = recipe()
    assert steps and steps[0].line == f"python -m venv {OLD}"
    for command in steps:
        run(Command(command.line.replace(OLD, str(old)), command.status), tmp_path, env)
    probe = "import json, sys, killpoint; print(json.dumps([killpoint.__file__, sys.path]))"
    out = subprocess.run(
        [str(old / "bin" / "python"), "-c", probe], capture_output=True, text=True, env=env,
        check=True,
    )  # fmt: skip
    where, path = json.loads(out.stdout)
    expected = REPO / "harness" if kind == "editable" else installed
    assert Path(where).is_relative_to(expected), where
    own = [p for p in path if p.startswith(str(old))]
    project = [p for p in path if p.startswith(str(venv)) and not p.startswith(str(old))]
    assert own and project and path.index(own[-1]) < path.index(project[0])
