"""The registry of built-in runtimes is the one place that names them: the loader, the
warm-up, the versions a report records and both faces' help texts read it."""

from __future__ import annotations

import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest

from killpoint.adapters import registry
from killpoint.report.document import versions

REPO = Path(__file__).resolve().parents[3]


@pytest.mark.parametrize("name", list(registry.BUILTINS))
def test_every_builtin_loads_by_its_name(name: str) -> None:
    builtin = registry.BUILTINS[name]
    module = __import__(builtin.module, fromlist=["import_problem"])
    problem = getattr(module, "import_problem", lambda: None)()
    if problem is not None:
        pytest.skip(f"{name} is not installed here: {problem}")
    adapter = registry.load_adapter(name)
    assert type(adapter).__name__ == builtin.factory


def test_each_warm_up_runs_a_scenario_without_raising() -> None:
    # In a fresh process, as the forkserver runs them: every built-in's adapter preloaded.
    script = (
        "import importlib, sys\n"
        "from killpoint.adapters import registry\n"
        "for b in registry.BUILTINS.values():\n"
        "    importlib.import_module(b.module)\n"
        "print(registry.warm_loaded())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, check=True
    )
    assert out.stdout.strip() == "[]", out.stderr


def test_a_broken_warm_up_is_named_not_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    import killpoint.adapters.reference  # noqa: F401  (a preloaded adapter's warm-up runs)

    broken = registry.Builtin("broken", "killpoint.adapters.reference", "X", warm="json:nowhere")
    monkeypatch.setattr(registry, "BUILTINS", {"broken": broken})
    assert registry.warm_loaded() == ["broken"]


def test_the_help_texts_name_every_builtin() -> None:
    for argv in (["matrix", "--help"], ["check-adapter", "--help"]):
        out = subprocess.run(
            [sys.executable, "-m", "killpoint.cli.main", *argv],
            capture_output=True, text=True, timeout=60, cwd=REPO,
        )  # fmt: skip
        text = " ".join(out.stdout.split())
        for name in registry.BUILTINS:
            assert name in text, (argv, name)
    from killpoint.plugin.settings import OPTIONS

    runtime_help = next(h for option, *_, h in OPTIONS if option == "--crash-runtime")
    assert all(name in runtime_help for name in registry.BUILTINS)


def test_the_versions_come_from_the_builtins() -> None:
    installed = {d.metadata["Name"].lower() for d in metadata.distributions()}
    for name, builtin in registry.BUILTINS.items():
        wanted = set(builtin.distributions)
        assert {d for d in wanted if d.lower() in installed} <= set(versions(name)), name
