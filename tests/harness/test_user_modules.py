"""A runtime or scenario module of the user's that raises anything when imported (or whose
factory raises) is named in one line with what it raised: exit 2 from the command, a usage
error from pytest, never a traceback."""

# ruff: noqa: SIM300
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
pytest_plugins = ["pytester"]

MODULES = {
    "raises_at_import": 'raise RuntimeError("no config\\nfound here")\n',
    "bad_syntax": "def broken(:\n    pass\n",
    "bad_factory": "def make():\n    raise ValueError('the factory failed')\n",
}
CASES = [
    ("--runtime", "raises_at_import:adapter", "RuntimeError: no config found here"),
    ("--runtime", "bad_syntax:adapter", "SyntaxError: invalid syntax"),
    ("--runtime", "bad_factory:make", "ValueError: the factory failed"),
    ("--scenarios", "raises_at_import:SCENARIO", "RuntimeError: no config found here"),
    ("--scenarios", "bad_syntax:SCENARIO", "SyntaxError: invalid syntax"),
    ("--scenarios", "bad_factory:make", "ValueError: the factory failed"),
]


def write_modules(folder: Path) -> None:
    for name, text in MODULES.items():
        (folder / f"{name}.py").write_text(text)


@pytest.mark.parametrize(("option", "value", "raised"), CASES)
def test_the_command_names_the_module_and_what_it_raised(
    tmp_path: Path, option: str, value: str, raised: str
) -> None:
    write_modules(tmp_path)
    result = subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "matrix", option, value,
         "--json", str(tmp_path / "m.json"), "--report", str(tmp_path / "m.html")],
        cwd=tmp_path, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip
    assert 2 == result.returncode, result.stderr
    lines = result.stderr.strip().splitlines()
    assert 1 == len(lines), result.stderr
    assert f"{option}={value!r}" in lines[0]
    assert raised in lines[0]
    assert not (tmp_path / "m.json").exists()


@pytest.mark.parametrize(("option", "value", "raised"), CASES)
def test_the_pytest_plugin_gives_a_usage_error(
    pytester: pytest.Pytester, option: str, value: str, raised: str
) -> None:
    write_modules(pytester.path)
    pytester.syspathinsert()
    flag = "--crash-runtime" if option == "--runtime" else "--crash-scenarios"
    result = pytester.runpytest(f"{flag}={value}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    err = result.stderr.str()
    assert f"killpoint: {flag}={value!r}: " in err and raised in err, err
    assert "Traceback" not in err


def matrix(folder: Path, option: str, value: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "killpoint.cli.main", "matrix", option, value,
         "--json", str(folder / "m.json"), "--report", str(folder / "m.html")],
        cwd=folder, capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )  # fmt: skip


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    """Exit 2, one line, no traceback: that line."""
    assert 2 == result.returncode, result.stderr
    lines = result.stderr.strip().splitlines()
    assert 1 == len(lines), result.stderr
    assert "Traceback" not in result.stderr
    return lines[0]


@pytest.mark.parametrize(
    ("option", "value", "dotted"),
    [
        ("--runtime", "myagent/adapter.py:adapter", "'myagent.adapter:adapter'"),
        ("--runtime", "./myagent/adapter.py:adapter", "'myagent.adapter:adapter'"),
        ("--scenarios", "myagent/adapter.py:SCENARIO", "'myagent.adapter:SCENARIO'"),
    ],
)
def test_a_file_path_gets_the_dotted_module_form(
    tmp_path: Path, option: str, value: str, dotted: str
) -> None:
    """A file given where a module belongs: the module path with dots to give instead."""
    (tmp_path / "myagent").mkdir()
    (tmp_path / "myagent" / "__init__.py").write_text("")
    (tmp_path / "myagent" / "adapter.py").write_text("")
    shown = one_line(matrix(tmp_path, option, value))
    assert f"give a module path with dots, e.g. {dotted}" in shown, shown
    assert "No module named" not in shown


@pytest.mark.parametrize(
    ("option", "value"),
    [("--runtime", "myagent.adapter:adapter"), ("--scenarios", "myagent.adapter:SCENARIO")],
)
def test_a_module_that_raises_while_imported_is_named_with_where(
    tmp_path: Path, option: str, value: str
) -> None:
    """A NameError in the user's module: said to be raised while importing it, with the
    file and line, without the hint about factories of an Agent."""
    (tmp_path / "myagent").mkdir()
    (tmp_path / "myagent" / "__init__.py").write_text("")
    (tmp_path / "myagent" / "adapter.py").write_text("import json\n\nadapter = undefined_name\n")
    shown = one_line(matrix(tmp_path, option, value))
    assert (
        "module 'myagent.adapter' raised NameError: name 'undefined_name' is not defined "
        "while being imported (at myagent/adapter.py:3, in <module>)"
    ) in shown, shown
    assert "agent_adapter" not in shown and "is the project importable" not in shown
