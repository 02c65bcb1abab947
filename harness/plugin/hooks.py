"""killpoint's pytest plugin: the crash matrix as test items, a `killpoint` marker and a
`crash` fixture. A thin layer: the engine (killpoint.engine.engine, killpoint.engine.campaign) does the work
and does not know pytest exists.

Collection under pytest-xdist — the choice, and why. A cell is planned from its row's
baseline (which boundaries, batches and model turns the scenario has), and a baseline is
only known by running it. If every worker ran baselines at collection, each worker's
collection would depend on its own runs, and xdist refuses collections that differ. So the
process that owns the session plans once: the xdist controller (or the only process,
without xdist) runs the baselines before any worker starts (in a thread, while xdist spawns
the workers) and hands every worker the same plan — the cell ids, the rows that could not
be planned, the seed — through `workerinput`. A worker collects exactly that list, so
collection is identical by construction, on popen and ssh gateways alike. The plan carries
the baselines too, and each worker judges its cells against them (a worker never reruns a
baseline): a host where a cell cannot be reached shows up as a verdict ("missed"), never
as a different collection.

Results travel on the reports: every cell's CellResult rides on its call-phase report as
the `killpoint` attribute (a JSON string: pytest copies report attributes when xdist
serialises reports), so a worker that dies loses nothing already reported; the controller
alone (or the single process) writes the JSON and HTML in pytest_sessionfinish.
"""

from __future__ import annotations

import secrets
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from killpoint.plugin import cassettes, corpus_items, node_ids
from killpoint.plugin import settings as plugin_settings
from killpoint.plugin.crash_fixture import CHECK_KEYS, Crash, CrashResults
from killpoint.plugin.keys import (
    CASSETTE_FIXTURE,
    CASSETTES_MARKER,
    MARKER,
    MATRIX_MARKER,
    SESSION_KEY,
)
from killpoint.plugin.masking import mask_report
from killpoint.plugin.session import KillpointSession
from killpoint.plugin.settings import Settings

if TYPE_CHECKING:
    pass

CACHE_SEED = "killpoint/seed"


# -- hooks ----------------------------------------------------------------------------------


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    # Outermost (tryfirst): after pytest's skipping plugin has placed a skip.
    report = yield
    node_ids.relocate_skip(item, report)
    mask_report(report)  # before the terminal and --junitxml see it
    return report


def pytest_addoption(parser: pytest.Parser) -> None:
    plugin_settings.addoptions(parser)
    corpus_items.addoption(parser)


def pytest_configure(config: pytest.Config) -> None:
    keywords = ", ".join(f"{k}=..." for k in CHECK_KEYS)
    config.addinivalue_line(
        "markers",
        f"{MARKER}(runtime=None, scenario=None, *, {keywords}): defaults for the `crash` "
        "fixture's check() in this test",
    )
    config.addinivalue_line(
        "markers",
        f"{MATRIX_MARKER}: every cell of --crash-matrix (select them with -m {MATRIX_MARKER})",
    )
    config.addinivalue_line(
        "markers",
        f"{CASSETTES_MARKER}(folder): run the test once per cassette (*.json) in the folder "
        "(from the test file's), its crash.check() checking that cassette",
    )
    settings = plugin_settings.read(config)
    cells = node_ids.take_cells(config)  # every process: xdist's workers get the same argv
    if cells:
        settings = node_ids.checked(settings, cells)
    config.pluginmanager.register(node_ids.RowClassnames(config), "killpoint-row-classnames")
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    wire = (workerinput or {}).get("killpoint")
    if wire is not None:
        seed = int(wire["seed"])  # the controller chose and validated
    else:
        plugin_settings.check(settings)
        seed = _choose_seed(config, settings)
    state = KillpointSession(config, settings, seed, wire)
    config.stash[SESSION_KEY] = state
    config.pluginmanager.register(state, "killpoint-session")
    corpus_items.configure(config)


def _choose_seed(config: pytest.Config, settings: Settings) -> int:
    cache = getattr(config, "cache", None)
    if settings.seed == "last":
        last = cache.get(CACHE_SEED, None) if cache is not None else None
        if not isinstance(last, int):
            why = (
                "pytest's cache is disabled (-p no:cacheprovider)"
                if cache is None
                else "no previous seed in pytest's cache; run once without it"
            )
            raise pytest.UsageError(f"killpoint: {settings.label('seed')}='last': {why}")
        seed = last
    elif settings.seed is not None:
        seed = int(settings.seed)
    else:
        seed = secrets.randbelow(2**31)
    if cache is not None:
        cache.set(CACHE_SEED, seed)
    return seed


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    cassettes.parametrize(metafunc)


@pytest.fixture(name=CASSETTE_FIXTURE)
def crash_cassette(request: pytest.FixtureRequest) -> Path | None:
    """The cassette a `crash_cassettes` item checks (None: the test is not one)."""
    return getattr(request, "param", None)


@pytest.fixture
def crash(request: pytest.FixtureRequest, tmp_path: Path, crash_cassette: Path | None) -> Crash:
    """Crash-test your own runtime and scenarios: `crash.check("pkg.agents:build",
    scenario="pkg.scenarios:FLOW", points="boundaries")`, or a recording of your agent:
    `crash.check("pkg.agents:build", cassette="cassettes/flow.json")`."""
    return Crash(request, tmp_path, crash_cassette)


__all__ = ["Crash", "CrashResults", "KillpointSession", "Settings", "crash"]
