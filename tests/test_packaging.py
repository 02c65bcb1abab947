"""The distribution installs one import name, `killpoint`, over the repository's three code
folders, and nothing of killpoint is ever imported under a folder's own name."""

# ruff: noqa: SIM300
from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
FOLDERS = {
    "killpoint": "harness",
    "killpoint.runtime": "runtime",
    "killpoint.scenarios": "scenarios",
}


def configured() -> dict[str, object]:
    with open(REPO / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["tool"]["setuptools"]


def test_the_package_dir_maps_each_folder_to_its_name() -> None:
    assert FOLDERS == configured()["package-dir"]


def test_every_package_folder_is_listed() -> None:
    """A new subpackage that is not listed would be missing from the wheel."""
    found = {"killpoint.report.templates"}  # data only: the report's template, script and style
    for name, folder in FOLDERS.items():
        for init in (REPO / folder).rglob("__init__.py"):
            parts = init.parent.relative_to(REPO / folder).parts
            found.add(".".join((name, *parts)))
    assert sorted(found) == sorted(configured()["packages"])  # type: ignore[arg-type]


@pytest.mark.slow
def test_the_wheel_holds_killpoint_and_nothing_else_at_the_top(tmp_path: Path) -> None:
    source = tmp_path / "src"  # a copy: building leaves build/ and egg-info behind
    for folder in FOLDERS.values():
        shutil.copytree(REPO / folder, source / folder)
    for file in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / file, source / file)
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
         "-w", str(tmp_path / "dist"), str(source)],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    (wheel,) = (tmp_path / "dist").glob("killpoint-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert {"killpoint"} == {n.split("/")[0] for n in names if ".dist-info/" not in n}
    for module in (
        "killpoint/__init__.py",
        "killpoint/runtime/agent.py",
        "killpoint/scenarios/builtin/research.py",
        "killpoint/report/templates/report.html.j2",
        "killpoint/report/templates/report.js",
        "killpoint/report/templates/report.css",
        "killpoint/py.typed",
    ):
        assert module in names


def test_no_module_reaches_for_a_folder_by_its_own_name(tmp_path: Path) -> None:
    """Packages named `harness`, `runtime` and `scenarios` that raise when imported stand
    first on the path; every killpoint module, the plugin included, still imports."""
    for decoy in ("harness", "runtime", "scenarios"):
        (tmp_path / decoy).mkdir()
        (tmp_path / decoy / "__init__.py").write_text(
            f"raise ImportError('the user\\'s own {decoy} package was imported')\n"
        )
    script = (
        "import importlib, pkgutil\n"
        "for name in ('killpoint', 'killpoint.runtime', 'killpoint.scenarios'):\n"
        "    package = importlib.import_module(name)\n"
        "    for m in pkgutil.walk_packages(package.__path__, name + '.'):\n"
        "        if m.name != 'killpoint.workers.warm':  # runs a scenario when imported\n"
        "            importlib.import_module(m.name)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert 0 == result.returncode, result.stderr


def test_the_public_api_names_resolve() -> None:
    """Every public name is the object it names, not a submodule of the same name (a
    submodule, once imported, would shadow the lazy name on the package)."""
    import types

    import killpoint

    for name in killpoint.__all__:
        assert getattr(killpoint, name) is not None
        if name != "gates":
            assert not isinstance(getattr(killpoint, name), types.ModuleType), name
            assert not (REPO / "harness" / f"{name}.py").exists(), name
    with pytest.raises(AttributeError, match="no attribute 'nothing_here'"):
        killpoint.nothing_here  # noqa: B018
