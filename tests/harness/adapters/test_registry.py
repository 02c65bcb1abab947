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
    from killpoint.engine.option_table import PYTEST, option

    runtime_help = option("runtime").described(PYTEST)
    assert all(name in runtime_help for name in registry.BUILTINS)


def test_the_versions_come_from_the_builtins() -> None:
    installed = {d.metadata["Name"].lower() for d in metadata.distributions()}
    for name, builtin in registry.BUILTINS.items():
        wanted = set(builtin.distributions)
        assert {d for d in wanted if d.lower() in installed} <= set(versions(name)), name


@pytest.mark.parametrize("runtime", ["agno", "langgraph", "pydantic-ai"])
def test_each_built_in_runtime_ships_its_by_design_groups(runtime: str) -> None:
    """Issue 56: nothing marked what a runtime's docs call by design. Each built-in runtime
    ships an accepted-findings file (`--accept builtin`) whose every entry names a finding
    kind, gives the doc's reason, and links the page that says so."""
    from killpoint.engine.acceptances import accepted_groups
    from killpoint.judge.groups import read_accepted
    from killpoint.values.findings import KINDS

    path = registry.accepted_file(runtime)
    assert path is not None and path.is_file()
    entries = read_accepted(path)
    assert entries == accepted_groups("builtin", runtime)
    docs = Path(__file__).parents[3] / "docs"
    for key, entry in entries.items():
        assert key.split(":")[0] in KINDS, key
        assert entry.reason.startswith("by design in "), entry.reason
        page = docs / entry.link.partition("#")[0].removeprefix("docs/")
        assert page.is_file(), entry.link
        assert "by design" in page.read_text(encoding="utf-8").lower()


def test_the_reference_runtime_has_no_by_design_findings() -> None:
    from killpoint.engine.acceptances import accepted_groups

    assert registry.accepted_file("reference") is None
    assert accepted_groups("builtin", "reference") == {}


def test_agno_accepts_what_its_docs_call_by_design_and_not_its_defects() -> None:
    from killpoint.engine.acceptances import accepted_groups

    keys = set(accepted_groups("builtin", "agno"))
    assert {
        "stale-write:-:store",
        "two-drivers:-:runs",
        "effect-duplicated:*:ledger",
        "cancel-ignored:-:model",
        "cancel-late:-:model@no-crash",
    } <= keys
    # docs/agno.md's defects still fail
    assert not keys & {
        "tool-executions-lost:-:runs[*].tool_executions",
        "acknowledged-lost:-:runs[*].status",
        "usage-differs:-:state.session_metrics",
    }


def test_a_misdeclared_store_kind_is_bad_input() -> None:
    """A misspelt kind in `stores` would skip every row in silence: refused on load."""
    from killpoint.errors import AdapterError

    with pytest.raises(AdapterError) as caught:
        registry.load_adapter("tests.harness.declining_runtimes:misstored")
    assert str(caught.value) == (
        "killpoint: runtime 'tests.harness.declining_runtimes:misstored': stores should be a "
        "sequence of the store kinds it supports, from sqlite, postgresql, got ('postgres',) "
        "(leave it out to support every kind)"
    )
    loaded = registry.load_adapter("tests.harness.declining_runtimes:sqlite_only")
    assert getattr(loaded, "stores", None) == ("sqlite",)


def refused(spec: str) -> str:
    from killpoint.errors import AdapterError

    with pytest.raises(AdapterError) as caught:
        registry.load_adapter(spec)
    return str(caught.value)


def test_a_misspelt_built_in_gets_the_one_it_meant() -> None:
    assert refused("refrence").startswith(
        "killpoint: unknown runtime 'refrence'; did you mean 'reference'? choose from reference"
    )
    assert refused("nosuch").startswith("killpoint: unknown runtime 'nosuch'; choose from ")


def test_a_file_path_without_its_factory_gets_the_dotted_form() -> None:
    """Like `myagent/killpoint_adapter.py:adapter` (import_paths), not the built-ins' list."""
    assert refused("myagent/killpoint_adapter.py") == (
        "killpoint: runtime 'myagent/killpoint_adapter.py' is a file path, not a module, and "
        "names no adapter; give the module with dots and the adapter's name after ':', e.g. "
        "'myagent.killpoint_adapter:adapter' (a RuntimeAdapter, its class, or a function "
        "without arguments that returns one)"
    )


def test_a_misspelt_factory_gets_the_one_it_meant() -> None:
    assert refused(f"{__name__}:refusd") == (
        f"killpoint: runtime '{__name__}:refusd' cannot be imported: "
        f"{__name__!r} has no attribute 'refusd'; did you mean 'refused'?"
    )
