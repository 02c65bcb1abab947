"""killpoint's pytest plugin: the crash matrix as test items, a `killpoint` marker and a
`crash` fixture. A thin layer: the engine (harness.engine, harness.campaign) does the work
and does not know pytest exists.

Collection under pytest-xdist — the choice, and why. A cell is planned from its row's
baseline (which boundaries, batches and model turns the scenario has), and a baseline is
only known by running it. If every worker ran baselines at collection, each worker's
collection would depend on its own runs, and xdist refuses collections that differ. So the
process that owns the session plans once: the xdist controller (or the only process,
without xdist) runs the baselines before any worker starts (in a thread, while xdist spawns
the workers) and hands every worker the same plan — the cell ids, the rows that could not
be planned, the seed — through `workerinput`. A worker collects exactly that list, so
collection is identical by construction, on popen and ssh gateways alike. Each worker then
runs its own baselines (once per row it meets, cached) to judge its cells: a host that
disagrees with the plan shows up as a verdict ("missed: not a boundary of this baseline"),
never as a different collection.

Results travel on the reports: every cell's CellResult rides on its call-phase report as
the `killpoint` attribute (a JSON string: pytest copies report attributes when xdist
serialises reports), so a worker that dies loses nothing already reported; the controller
alone (or the single process) writes the JSON and HTML in pytest_sessionfinish.
"""

from __future__ import annotations

import dataclasses
import importlib
import json
import os
import re
import secrets
import shlex
import site
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .baseline import Baseline
    from .campaign import Campaign, CampaignConfig, Skipped
    from .cell import CellResult
    from .engine import Engine

MODES = ("runs", "tool-batch", "tool")
KEEP = ("none", "failed", "all")
CACHE_SEED = "killpoint/seed"
MATRIX = "killpoint"  # the node id of the matrix collector; items are "killpoint::CELL"
REPORT_ATTR = "killpoint"  # the report attribute carrying the cells' results (JSON)
MARKER = "killpoint"
RESULTS_KEY = pytest.StashKey[list["CellResult"]]()

# (option, ini name, ini type, metavar, help)
OPTIONS: tuple[tuple[str, str, str, str | None, str], ...] = (
    ("--crash-matrix", "crash_matrix", "bool", None, "collect the crash matrix as test items"),
    ("--crash-runtime", "crash_runtime", "string", "RUNTIME",
     "runtime under test: 'reference' or 'package.module:adapter' (default: reference)"),
    ("--crash-scenarios", "crash_scenarios", "string", "NAMES",
     "comma-separated scenarios: built-in names, 'random:SEED' or 'package.module:SCENARIO' "
     "(default: every built-in)"),
    ("--crash-modes", "crash_modes", "string", "MODES",
     "comma-separated checkpoint modes: runs,tool-batch,tool (default: all three)"),
    ("--crash-points", "crash_points", "string", "POINTS",
     "boundaries | kills | faults | all | random:N | kinds or points, comma-separated "
     "(default: all)"),
    ("--crash-depth", "crash_depth", "string", "1|2", "2: crash the resumed run too (default: 1)"),
    ("--crash-seed", "crash_seed", "string", "SEED",
     "seed for random points; 'last' reuses the previous run's (default: a new one)"),
    ("--crash-store", "crash_store", "string", "STORE",
     "sqlite, or a postgresql+psycopg:// URL (each xdist worker gets its own database)"),
    ("--crash-report", "crash_report", "string", "PATH", "write the HTML crash-matrix report"),
    ("--crash-json", "crash_json", "string", "PATH", "write the crash matrix as JSON"),
    ("--crash-keep", "crash_keep", "string", "none|failed|all",
     "keep the store file and worker logs of these cells (default: failed)"),
)  # fmt: skip


# -- settings -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Settings:
    """The session's crash options: command line over ini over defaults, validated."""

    matrix: bool = False
    runtime: str = "reference"
    scenarios: tuple[str, ...] = ()  # empty: every built-in
    modes: tuple[str, ...] = MODES
    points: str = "all"
    depth: int = 1
    seed: str | None = None  # a number, "last", or None (choose one)
    store: str = "sqlite"
    report: Path | None = None
    json: Path | None = None
    keep: str = "failed"
    sources: dict[str, str] = field(default_factory=dict, compare=False)


def _split(text: str) -> tuple[str, ...]:
    return tuple(p for p in re.split(r"[,\s]+", text.strip()) if p)


def _read(config: pytest.Config) -> Settings:
    """Each option from the command line, else the ini file, else its default."""
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    base = {"cmdline": config.invocation_params.dir, "ini": config.rootpath}
    for option, ini, _kind, _metavar, _help in OPTIONS:
        key = ini.removeprefix("crash_")
        given = config.getoption(ini)
        if given is not None:
            raw, source, where = given, option, "cmdline"
        else:
            raw, source, where = config.getini(ini), f"ini option {ini}", "ini"
            if raw in ("", None, False):
                continue
        sources[key] = source  # only what was given: the rest are valid defaults
        if key == "matrix":
            values[key] = bool(raw)
        elif key in ("scenarios", "modes"):
            values[key] = _split(str(raw))
        elif key in ("report", "json"):
            path = Path(str(raw)).expanduser()
            values[key] = path if path.is_absolute() else base[where] / path
        else:
            values[key] = str(raw).strip()
    depth = values.pop("depth", "1")
    settings = Settings(**values, sources=sources)
    if not (isinstance(depth, str) and depth in ("1", "2")):
        raise _usage(
            settings, "depth", depth, "give 1 (one crash) or 2 (crash the resumed run too)"
        )
    return replace(settings, depth=int(depth))


def _usage(settings: Settings, key: str, value: object, why: str) -> pytest.UsageError:
    source = settings.sources.get(key, f"--crash-{key}")
    why = why.removeprefix("killpoint: ")
    return pytest.UsageError(f"killpoint: {source}={value!r}: {why}")


def _validate(settings: Settings) -> None:
    """Every option given is checked before anything runs (defaults are valid, and cost no
    imports); a UsageError names the option and the value."""
    given = settings.sources
    if "modes" in given:
        for mode in settings.modes:
            if mode not in MODES:
                raise _usage(settings, "modes", mode, f"not a mode; choose from {', '.join(MODES)}")
        if not settings.modes:
            raise _usage(settings, "modes", "", f"no modes; choose from {', '.join(MODES)}")
    if "keep" in given and settings.keep not in KEEP:
        raise _usage(settings, "keep", settings.keep, f"choose from {', '.join(KEEP)}")
    if "seed" in given and settings.seed != "last" and not str(settings.seed).isdigit():
        raise _usage(settings, "seed", settings.seed, "give a whole number, or 'last'")
    if "points" in given:
        from .campaign import CampaignConfig, ConfigError

        try:
            CampaignConfig(points=settings.points).point_kinds()
        except ConfigError as exc:
            raise _usage(settings, "points", settings.points, str(exc)) from None
    if "runtime" in given or "modes" in given:
        adapter = _load_runtime(
            settings.runtime, lambda why: _usage(settings, "runtime", settings.runtime, why)
        )
        if not any(m in adapter.modes for m in settings.modes):
            raise _usage(
                settings,
                "modes",
                ",".join(settings.modes),
                f"runtime {settings.runtime!r} offers only {', '.join(adapter.modes)}",
            )
    if "scenarios" in given:
        from .targets import ScenarioRefError, resolve_scenario

        for name in settings.scenarios:
            try:
                resolve_scenario(name)
            except (ScenarioRefError, LookupError) as exc:
                raise _usage(settings, "scenarios", name, str(exc)) from None
    if "store" in given:
        from .stores import StoreError, Stores

        try:
            Stores(settings.store).check()
        except StoreError as exc:
            raise _usage(settings, "store", _shown(settings.store), str(exc)) from None
    for key in ("report", "json"):
        path = getattr(settings, key)
        if path is not None:
            from .results import check_writable

            try:
                check_writable(path)
            except OSError as exc:
                raise _usage(settings, key, str(path), f"cannot write there: {exc}") from None


def _load_runtime(spec: str, error: Any) -> Any:
    """The adapter for `spec`, or `error(why)` raised with a hint that names the fix."""
    from .adapter import AdapterError, load_adapter

    try:
        return load_adapter(spec)
    except AdapterError as exc:
        raise error(str(exc)) from None
    except Exception as exc:  # a factory that needs arguments: an Agent factory, not wrapped
        raise error(
            f"calling it gave {type(exc).__name__}: {exc}; an import path must name a "
            "RuntimeAdapter (or a no-argument callable returning one) — for a function that "
            "builds a runtime.Agent, decorate it with harness.engine.agent_adapter"
        ) from None


def _shown(store: str) -> str:
    """A store URL without its password."""
    if store == "sqlite":
        return store
    from sqlalchemy.engine import make_url

    try:
        return make_url(store).render_as_string(hide_password=True)
    except Exception:
        return store


# -- hooks ----------------------------------------------------------------------------------


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("killpoint", "killpoint crash matrix")
    for option, ini, kind, metavar, text in OPTIONS:
        if kind == "bool":
            group.addoption(option, action="store_true", default=None, dest=ini, help=text)
            parser.addini(ini, f"{text} (like {option})", type="bool", default=False)
        else:
            group.addoption(
                option, action="store", default=None, dest=ini, metavar=metavar, help=text
            )
            parser.addini(ini, f"{text} (like {option})", type="string", default="")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        f"{MARKER}(runtime=None, scenario=None, *, modes=..., points=..., depth=..., "
        "store=..., keep=..., timeout=...): defaults for the `crash` fixture's check() in "
        "this test; every cell of --crash-matrix carries it too",
    )
    settings = _read(config)
    workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
    wire = (workerinput or {}).get("killpoint")
    if wire is not None:
        seed = int(wire["seed"])  # the controller chose and validated
    else:
        _validate(settings)
        seed = _choose_seed(config, settings)
    state = KillpointSession(config, settings, seed, wire)
    config.stash[SESSION_KEY] = state
    config.pluginmanager.register(state, "killpoint-session")


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
            raise _usage(settings, "seed", "last", why)
        seed = last
    elif settings.seed is not None:
        seed = int(settings.seed)
    else:
        seed = secrets.randbelow(2**31)
    if cache is not None:
        cache.set(CACHE_SEED, seed)
    return seed


@dataclass
class MatrixPlan:
    """What every process collects: made once by the session's owner, shipped to workers."""

    cells: list[str] = field(default_factory=list)
    broken: list[tuple[str, str]] = field(default_factory=list)  # (row id, why)
    skipped: list[tuple[str, str]] = field(default_factory=list)  # (row id, why)
    error: str | None = None
    # Only in the process that planned:
    campaign: Campaign | None = None
    baselines: list[Baseline] = field(default_factory=list)
    skipped_rows: list[Skipped] = field(default_factory=list)

    def to_wire(self) -> str:
        """JSON (execnet carries a str as is, to popen and ssh gateways alike)."""
        return json.dumps(
            {
                "cells": self.cells,
                "broken": self.broken,
                "skipped": self.skipped,
                "error": self.error,
                "baselines": [baseline_to_wire(b) for b in self.baselines],
            }
        )

    @classmethod
    def from_wire(cls, text: str) -> MatrixPlan:
        data = json.loads(text)
        return cls(
            cells=list(data["cells"]),
            broken=[(a, b) for a, b in data["broken"]],
            skipped=[(a, b) for a, b in data["skipped"]],
            error=data["error"],
            baselines=[baseline_from_wire(b) for b in data["baselines"]],
        )


def baseline_to_wire(base: Baseline) -> dict[str, Any]:
    """Every field but the derived batches (rebuilt by analyse()); effects as triples."""
    data = {f.name: getattr(base, f.name) for f in dataclasses.fields(base)}
    del data["batches"]
    data["effects"] = [[tool, args, n] for (tool, args), n in base.effects.items()]
    return data


def baseline_from_wire(data: dict[str, Any]) -> Baseline:
    from collections import Counter

    from .baseline import Baseline

    data = dict(data)
    effects = Counter({(tool, args): n for tool, args, n in data.pop("effects")})
    base = Baseline(**data, effects=effects)
    base.analyse()
    return base


def warm_forkserver(runtime: str) -> None:
    """Start the engine's forkserver now, preloading `runtime`; its warm-up overlaps with
    what comes next."""
    from multiprocessing import forkserver

    from .adapter import AdapterError, load_adapter
    from .processes import context

    try:
        modules = getattr(load_adapter(runtime), "preload_modules", ())
    except AdapterError:
        modules = ()  # reported where the runtime is used
    context(modules)
    forkserver.ensure_running()


SESSION_KEY = pytest.StashKey["KillpointSession"]()


class KillpointSession:
    """The plugin's state for one pytest process (controller, worker, or the only one)."""

    def __init__(
        self,
        config: pytest.Config,
        settings: Settings,
        seed: int,
        wire: dict[str, Any] | None,
    ) -> None:
        self.config = config
        self.settings = settings
        self.seed = seed
        self.workerinput: dict[str, Any] | None = getattr(config, "workerinput", None)
        self.worker_id = self.workerinput["workerid"] if self.workerinput else None
        self.token = wire["token"] if wire else uuid.uuid4().hex[:8]
        self._wire_plan = wire.get("plan") if wire else None
        self._plan: MatrixPlan | None = None
        self._planner: threading.Thread | None = None
        self._engine: Engine | None = None
        self._lock = threading.Lock()
        self._store_url: str | None = None
        self._databases: list[str] = []  # per-worker PostgreSQL databases to drop
        self._nodes: list[str] = []  # xdist workers this controller configured
        self.results: dict[tuple[str, str], CellResult] = {}
        self.t0 = time.monotonic()
        self.written: list[str] = []

    # -- roles --------------------------------------------------------------------------

    @property
    def is_worker(self) -> bool:
        return self.workerinput is not None

    # -- planning -----------------------------------------------------------------------

    def campaign_config(self, **overrides: Any) -> CampaignConfig:
        from .campaign import CampaignConfig

        s = self.settings
        values: dict[str, Any] = {
            "runtime": s.runtime,
            "scenarios": s.scenarios,
            "modes": s.modes,
            "points": s.points,
            "depth": s.depth,
            "seed": self.seed,
            "store": s.store,
            "keep": s.keep,
            "workers": os.cpu_count() or 2,
        }
        values.update(overrides)
        return CampaignConfig(**values)

    def start_planning(self) -> None:
        if self._planner is None and self._plan is None and self._wire_plan is None:
            self._planner = threading.Thread(
                target=self._plan_now, name="killpoint-plan", daemon=True
            )
            self._planner.start()

    def _plan_now(self) -> None:
        plan = MatrixPlan()
        try:
            plan = make_plan(self.campaign_config(work_root=self.tmp("killpoint-plan")))
        except Exception as exc:
            plan.error = f"{type(exc).__name__}: {exc}"
        self._plan = plan

    def plan(self) -> MatrixPlan:
        if self._plan is None and self._wire_plan is not None:  # a worker
            self._plan = MatrixPlan.from_wire(self._wire_plan)
        if self._plan is None:
            self.start_planning()
            assert self._planner is not None
            self._planner.join()
        assert self._plan is not None
        return self._plan

    # -- stores and engines -------------------------------------------------------------

    def tmp(self, name: str) -> Path:
        factory = getattr(self.config, "_tmp_path_factory", None)
        if factory is not None:
            return Path(factory.mktemp(name, numbered=True))
        return Path(tempfile.mkdtemp(prefix=f"{name}-"))

    def store_url(self) -> str:
        """The store this process runs cells on: under xdist, a database of its own."""
        with self._lock:
            if self._store_url is None:
                store = self.settings.store
                if store != "sqlite" and self.is_worker:
                    name = worker_database_name(store, self.token, str(self.worker_id))
                    store = create_database(store, name)
                    self._databases.append(name)
                self._store_url = store
            return self._store_url

    def engine(self) -> Engine:
        from .engine import Engine, EngineConfig

        with self._lock:
            planned = self._plan.campaign if self._plan is not None else None
        if planned is not None and not self.is_worker:
            return planned.engine  # the planning engine: its baselines are cached
        url = self.store_url()
        with self._lock:
            if self._engine is None:
                self._engine = Engine(
                    EngineConfig(
                        store=url,
                        keep=self.settings.keep,
                        work_root=self.tmp("killpoint-cells"),
                    )
                )
                # One baseline per row per session, as in a campaign: the controller's.
                for base in self._plan.baselines if self._plan is not None else ():
                    self._engine.adopt_baseline(base)
            return self._engine

    def parallel(self) -> int:
        """Cells at once inside one `crash.check`: the cores this process may use."""
        count = int(self.workerinput.get("workercount", 1)) if self.workerinput else 1
        return max(1, (os.cpu_count() or 2) // count)

    # -- pytest hooks -------------------------------------------------------------------

    def pytest_report_header(self, config: pytest.Config) -> list[str]:
        s = self.settings
        lines = [f"killpoint: seed {self.seed} (replay with --crash-seed {self.seed} or last)"]
        if s.matrix:
            lines.append(
                f"killpoint: crash matrix runtime={s.runtime} "
                f"scenarios={','.join(s.scenarios) or 'all'} modes={','.join(s.modes)} "
                f"points={s.points} depth={s.depth} store={_shown(s.store)} keep={s.keep}"
            )
        return lines

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        # Before xdist's (trylast) sessionstart spawns the workers: plan meanwhile.
        if self.settings.matrix and not self.is_worker:
            self.start_planning()
        elif self.settings.matrix:
            warm_forkserver(self.settings.runtime)  # it preloads while this worker collects

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """xdist controller: every worker gets the same plan and seed."""
        wire: dict[str, Any] = {"seed": self.seed, "token": self.token, "plan": None}
        if self.settings.matrix:
            wire["plan"] = self.plan().to_wire()
        node.workerinput["killpoint"] = wire
        self._nodes.append(str(node.gateway.id))

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        # tryfirst: the cells are in the list before -k and -m deselect.
        if self.settings.matrix:
            items.extend(matrix_items(session, self.plan()))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(
        self, item: pytest.Item, call: pytest.CallInfo[None]
    ) -> Generator[None, pytest.TestReport, pytest.TestReport]:
        report = yield
        results = item.stash.get(RESULTS_KEY, None)
        if call.when == "call" and results:
            setattr(report, REPORT_ATTR, json.dumps([r.to_json() for r in results]))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # "???": the report xdist makes for an item whose worker crashed.
        if self.is_worker or report.when not in ("call", "???"):
            return
        from .cell import CellResult

        data = getattr(report, REPORT_ATTR, None)
        if data:
            for entry in json.loads(data):
                result = CellResult.from_json(entry)
                self.results[(report.nodeid, result.id)] = result
        elif report.failed and report.nodeid.startswith(f"{MATRIX}::"):
            # The worker running this cell died (xdist reports the crash): count it.
            cell_id = report.nodeid.partition("::")[2]
            lost = lost_cell(cell_id, str(report.longrepr)[-2000:])
            if lost is not None:
                self.results[(report.nodeid, cell_id)] = lost

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        _kill_workers()  # nothing of ours outlives the session (each cell reaps its own)
        if self.is_worker:
            self._drop_databases(self._databases)
            return
        if self.settings.store != "sqlite" and self._nodes:
            # Backstop: a worker that died could not drop its database.
            names = [worker_database_name(self.settings.store, self.token, n) for n in self._nodes]
            self._drop_databases(names)
        if self.settings.json or self.settings.report:
            self.write_reports(session, exitstatus)

    def _drop_databases(self, names: list[str]) -> None:
        for name in names:
            drop_database(self.settings.store, name)

    def write_reports(self, session: pytest.Session, exitstatus: int) -> None:
        from .campaign import CampaignResult, sorted_cells
        from .results import to_document, write_atomically, write_json

        plan = self._plan if self.settings.matrix else None
        result = CampaignResult(self.campaign_config(), self.seed)
        result.cells = sorted_cells(list(self.results.values()))
        result.seconds = time.monotonic() - self.t0
        result.interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
        if plan is not None:
            result.baselines = plan.baselines
            result.skipped = plan.skipped_rows
            result.planned = len(plan.cells)
        command = ["pytest", *self.config.invocation_params.args]
        document = to_document(result, command=command)
        document["pytest"] = {"exitstatus": int(exitstatus), "seed": self.seed}
        if self.settings.json:
            write_json(document, self.settings.json)
            self.written.append(str(self.settings.json))
        if self.settings.report:
            try:
                from .report import render_report
            except ImportError:
                return
            write_atomically(self.settings.report, render_report(document))
            self.written.append(str(self.settings.report))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker or not self.results:
            return
        cells = list(self.results.values())
        bad = [c for c in cells if not c.expected]
        losses = sum(1 for c in cells if c.verdict == "lost" and c.expected)
        terminalreporter.write_sep("-", "killpoint")
        terminalreporter.write_line(
            f"{len(cells)} cells, {len(bad)} unexpected, {losses} expected losses; seed {self.seed}"
        )
        for c in bad[:20]:
            terminalreporter.write_line(f"{c.verdict:<11} {c.id}")
            terminalreporter.write_line(f"            replay: {replay_line(c)}")
        if len(bad) > 20:
            terminalreporter.write_line(f"... and {len(bad) - 20} more")
        if self.written:
            terminalreporter.write_line(f"written: {', '.join(self.written)}")

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        _kill_workers()


def _kill_workers() -> None:
    """Kill engine workers still registered in this process (none unless interrupted)."""
    processes = sys.modules.get("harness.processes")
    if processes is not None:  # never imported: nothing was started
        processes.kill_all()


def make_plan(config: CampaignConfig) -> MatrixPlan:
    """Baselines (in parallel), then the cells of every row, in a deterministic order."""
    from concurrent.futures import ThreadPoolExecutor

    from .campaign import Campaign

    campaign = Campaign(config)
    rows, skipped = campaign.rows()
    with ThreadPoolExecutor(max_workers=config.workers, thread_name_prefix="baseline") as pool:
        baselines = list(pool.map(campaign.engine.baseline, rows))
    plan = MatrixPlan(campaign=campaign, baselines=baselines, skipped_rows=skipped)
    for s in skipped:
        plan.skipped.append(
            ("/".join((s.runtime, s.scenario, s.mode, campaign.store_kind)), s.reason)
        )
    for base in baselines:
        row = "/".join((base.runtime, base.scenario, base.mode, base.store))
        if base.problem:
            plan.broken.append((row, base.problem))
        plan.cells += [c.id for c in campaign.cells_for(base)]
    return plan


def lost_cell(cell_id: str, why: str) -> CellResult | None:
    """The verdict of a cell whose pytest worker died before it could report one."""
    from .cell import Cell, CellResult
    from .points import PointError

    try:
        cell = Cell.parse(cell_id)
    except PointError:
        return None
    return CellResult(
        id=cell.id,
        runtime=cell.runtime,
        scenario=cell.scenario,
        mode=cell.mode,
        store=cell.store,
        schedule=[str(p) for p in cell.schedule],
        verdict="missed",
        expected=False,
        detail=f"the pytest worker running this cell died: {why}",
        replay=cell.replay_command(),
    )


# -- PostgreSQL: a database per xdist worker ------------------------------------------------


def worker_database_name(store: str, token: str, worker: str) -> str:
    from sqlalchemy.engine import make_url

    base = make_url(store).database or "killpoint"
    name = re.sub(r"[^a-z0-9_]", "_", f"{base}_{token}_{worker}".lower())
    return name[-63:]  # PostgreSQL's identifier limit; the unique end is kept


def _admin_engine(store: str) -> Any:
    from sqlalchemy import create_engine
    from sqlalchemy.engine import make_url

    url = make_url(store).set(drivername="postgresql+psycopg")
    return create_engine(url, isolation_level="AUTOCOMMIT")


def create_database(store: str, name: str) -> str:
    """CREATE DATABASE `name` on the store's server; returns its URL."""
    from sqlalchemy import text
    from sqlalchemy.engine import make_url

    engine = _admin_engine(store)
    try:
        with engine.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}"'))
            conn.execute(text(f'CREATE DATABASE "{name}"'))
    finally:
        engine.dispose()
    url = make_url(store).set(drivername="postgresql+psycopg", database=name)
    return url.render_as_string(hide_password=False)


def drop_database(store: str, name: str) -> None:
    from sqlalchemy import text
    from sqlalchemy.exc import SQLAlchemyError

    engine = _admin_engine(store)
    try:
        with engine.connect() as conn:
            # FORCE: this process's own cached Stores may still hold pooled connections.
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    except SQLAlchemyError:
        pass  # a leftover database costs disk, not correctness
    finally:
        engine.dispose()


# -- the matrix as items --------------------------------------------------------------------


class CrashMatrix(pytest.Collector):
    """The parent of every cell item (node id `killpoint`); collects the plan's items."""

    def __init__(self, *, plan: MatrixPlan, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.plan = plan

    def collect(self) -> list[pytest.Item]:
        plan = self.plan
        items: list[pytest.Item] = []
        if plan.error:
            items.append(RowItem.from_parent(self, name="planning", why=plan.error, skip=False))
        items += [RowItem.from_parent(self, name=r, why=why, skip=True) for r, why in plan.skipped]
        items += [
            RowItem.from_parent(self, name=f"{row}/baseline", why=why, skip=False)
            for row, why in plan.broken
        ]
        items += [CellItem.from_parent(self, name=cell_id) for cell_id in plan.cells]
        for item in items:
            item.add_marker(MARKER)
            if isinstance(item, RowItem) and item.skip:
                # Reported at the item's own location, with the reason.
                item.add_marker(pytest.mark.skip(reason=item.why))
        return items

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, "killpoint crash matrix"


def matrix_items(session: pytest.Session, plan: MatrixPlan) -> list[pytest.Item]:
    """Collect the matrix as pytest collects a file: reports, counts and errors included."""
    matrix = CrashMatrix.from_parent(session, name=MATRIX, nodeid=MATRIX, plan=plan)
    session.ihook.pytest_collectstart(collector=matrix)
    report = session.ihook.pytest_make_collect_report(collector=matrix)
    report.__dict__.pop("call", None)
    session.ihook.pytest_collectreport(report=report)
    items = [x for x in (report.result or []) if isinstance(x, pytest.Item)]
    for item in items:
        session.ihook.pytest_itemcollected(item=item)
    return items


class CellFailed(Exception):
    """A cell whose verdict is unexpected for its mode and crash point."""

    def __init__(self, result: CellResult, seed: int) -> None:
        super().__init__(result.id)
        self.result = result
        self.seed = seed


class CellItem(pytest.Item):
    """One cell: (runtime, scenario, mode, store, schedule) -> one verdict."""

    def runtest(self) -> None:
        from .cell import Cell

        state = self.config.stash[SESSION_KEY]
        engine = state.engine()
        before = _dirs(engine.work_root)
        result = engine.run_cell(Cell.parse(self.name))
        kept = sorted(_dirs(engine.work_root) - before)
        cells = [p for p in kept if "-baseline-" not in p.name]
        if cells:
            result.kept = str(cells[-1])
        self.stash[RESULTS_KEY] = [result]
        self.user_properties += [
            ("cell", result.id),
            ("verdict", result.verdict),
            ("expected", "yes" if result.expected else "no"),
            ("schedule", "+".join(result.schedule)),
            ("replay", result.replay),
            ("seed", state.seed),
        ]
        if not result.expected:
            raise CellFailed(result, state.seed)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, CellFailed):
            return cell_failure(excinfo.value.result, excinfo.value.seed)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"killpoint cell {self.name}"


class RowItem(pytest.Item):
    """A row that yields no cells: skipped (the mode is not offered), or failed (no baseline)."""

    def __init__(self, *, why: str, skip: bool, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.why = why
        self.skip = skip

    def runtest(self) -> None:
        pytest.fail(f"killpoint: {self.name}: {self.why}", pytrace=False)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"killpoint row {self.name}"


def _dirs(root: Path) -> set[Path]:
    try:
        return {p for p in root.iterdir() if p.is_dir()}
    except FileNotFoundError:
        return set()


# -- failure messages -----------------------------------------------------------------------


def replay_line(result: CellResult) -> str:
    """The cell's replay command, with PYTHONPATH set when it names the user's own modules."""
    roots: list[str] = []
    for ref in (result.runtime, result.scenario):
        if ":" in ref and not ref.startswith("random:"):
            root = _import_root(ref.partition(":")[0])
            if root is not None and root not in roots:
                roots.append(root)
    if not roots:
        return result.replay
    return f"PYTHONPATH={shlex.quote(os.pathsep.join(roots))} {result.replay}"


def _import_root(module_name: str) -> str | None:
    """The sys.path entry `module_name` was imported from, unless it is an installed one."""
    try:
        module = sys.modules.get(module_name) or importlib.import_module(module_name)
    except Exception:
        return None
    filename = getattr(module, "__file__", None)
    if not filename:
        return None
    path = Path(filename).resolve()
    depth = module_name.count(".") + (1 if path.name == "__init__.py" else 0)
    root = path.parents[depth]
    installed = {Path(p).resolve() for p in (*site.getsitepackages(), site.getusersitepackages())}
    return None if root in installed else str(root)


def _difference(result: CellResult) -> str:
    diff = result.first_difference
    if not diff:
        return "-"
    return f"{diff.get('path')}: baseline {diff.get('baseline')!r}, resumed {diff.get('actual')!r}"


def cell_failure(result: CellResult, seed: int) -> str:
    lines = [
        f"killpoint: {result.id}",
        f"  verdict:          {result.verdict} (unexpected for {result.mode} at "
        f"{'+'.join(result.schedule)})",
        f"  detail:           {result.detail or '-'}",
        f"  first difference: {_difference(result)}",
        f"  duplicates:       {result.duplicates} (bound {result.bound})",
        f"  replay:           {replay_line(result)}",
        f"  seed:             {seed} (--crash-seed {seed})",
    ]
    if result.kept:
        lines.append(f"  kept:             {result.kept} (store, ledger, worker logs)")
    if result.timeline:
        lines.append("  timeline:")
        lines += [f"    {t:8.4f}s  {event}" for t, event in result.timeline[-15:]]
    if result.stderr_tail.strip():
        lines.append("  worker stderr (tail):")
        lines += [f"    {line}" for line in result.stderr_tail.strip().splitlines()[-20:]]
    return "\n".join(lines)


# -- the `crash` fixture --------------------------------------------------------------------

_CHECK_KEYS = ("modes", "points", "depth", "store", "keep", "timeout", "seed", "scenarios")


@dataclass
class CrashResults:
    """What one `crash.check` found: every cell's result, and what kept cells from running."""

    runtime: str
    scenarios: tuple[str, ...]
    seed: int
    cells: list[CellResult]
    problems: list[str] = field(default_factory=list)  # baselines that could not run
    skipped: list[str] = field(default_factory=list)
    seconds: float = 0.0
    work_root: Path | None = None

    @property
    def unexpected(self) -> list[CellResult]:
        return [c for c in self.cells if not c.expected]

    @property
    def ok(self) -> bool:
        """Every cell's verdict was expected, every baseline ran, and there were cells."""
        return bool(self.cells) and not self.unexpected and not self.problems

    def verdicts(self) -> dict[str, str]:
        return {c.id: c.verdict for c in self.cells}

    def __iter__(self) -> Iterator[CellResult]:
        return iter(self.cells)

    def __len__(self) -> int:
        return len(self.cells)

    def __str__(self) -> str:
        by: dict[str, int] = {}
        for c in self.cells:
            by[c.verdict] = by.get(c.verdict, 0) + 1
        counts = ", ".join(f"{n} {v}" for v, n in sorted(by.items())) or "no cells"
        return (
            f"killpoint: {self.runtime} on {', '.join(self.scenarios)}: {len(self.cells)} "
            f"cells ({counts}), {len(self.unexpected)} unexpected, seed {self.seed}"
        )

    def failure_message(self) -> str:
        lines = [str(self)]
        if not self.cells and not self.problems:
            lines.append("  no cells: the selection planned nothing (check points= and modes=)")
        for p in self.problems:
            lines.append(f"  baseline failed: {p}")
        for c in self.unexpected:
            lines.append(f"  {c.verdict:<11} {c.id}")
            if c.detail:
                lines.append(f"              {c.detail.splitlines()[0][:300]}")
            if c.first_difference and _difference(c) not in c.detail:
                lines.append(f"              first difference: {_difference(c)[:300]}")
            lines.append(f"              replay: {replay_line(c)}")
        if self.unexpected or self.problems:
            lines.append(f"  rerun with --crash-seed {self.seed}")
            if self.work_root is not None:
                lines.append(f"  kept cells (store, ledger, worker logs) under {self.work_root}")
        return "\n".join(lines)


class Crash:
    """The `crash` fixture: run the crash matrix of your own runtime and scenarios.

    `check()` fails the test, listing each unexpected cell with its replay command;
    `run()` only returns the results. Arguments default to the test's `killpoint` marker,
    then to the --crash-... options and ini values.
    """

    def __init__(self, request: pytest.FixtureRequest, tmp_path: Path) -> None:
        self.request = request
        self.tmp_path = tmp_path
        self.state = request.config.stash[SESSION_KEY]
        self._runs = 0

    @property
    def store(self) -> str:
        """The store this process runs cells on (under xdist: this worker's database)."""
        return self.state.store_url()

    def check(self, runtime: Any = None, scenario: Any = None, **options: Any) -> CrashResults:
        __tracebackhide__ = True
        results = self.run(runtime, scenario, **options)
        if not results.ok:
            pytest.fail(results.failure_message(), pytrace=False)
        return results

    def run(self, runtime: Any = None, scenario: Any = None, **options: Any) -> CrashResults:
        __tracebackhide__ = True
        from .campaign import Campaign, ConfigError

        config = self._config(runtime, scenario, options)
        try:
            config.validate()
        except ConfigError as exc:
            raise ConfigError(f"{exc} (in crash.check)") from None
        campaign = Campaign(config)
        outcome = campaign.run()
        if outcome.interrupted:
            raise KeyboardInterrupt
        results = CrashResults(
            runtime=config.runtime,
            scenarios=config.scenario_names(),
            seed=campaign.seed,
            cells=outcome.cells,
            problems=[
                f"{b.runtime}/{b.scenario}/{b.mode}: {b.problem}"
                for b in outcome.baselines
                if b.problem
            ],
            skipped=[f"{s.scenario}/{s.mode}: {s.reason}" for s in outcome.skipped],
            seconds=outcome.seconds,
            work_root=config.work_root if config.keep != "none" else None,
        )
        node = self.request.node
        node.stash.setdefault(RESULTS_KEY, []).extend(results.cells)
        node.user_properties += [
            ("killpoint_cells", len(results.cells)),
            ("killpoint_unexpected", len(results.unexpected)),
            ("killpoint_seed", results.seed),
        ]
        node.user_properties += [
            (f"killpoint {c.id}", f"{c.verdict}; replay: {c.replay}") for c in results.unexpected
        ]
        return results

    def _config(self, runtime: Any, scenario: Any, options: dict[str, Any]) -> CampaignConfig:
        from .campaign import ConfigError

        marker_args: dict[str, Any] = {}
        for mark in reversed(list(self.request.node.iter_markers(MARKER))):
            positional = dict(zip(("runtime", "scenario"), mark.args, strict=False))
            marker_args.update(positional, **mark.kwargs)
        merged = {**marker_args, **{k: v for k, v in options.items() if v is not None}}
        if runtime is not None:
            merged["runtime"] = runtime
        if scenario is not None:
            merged["scenario"] = scenario
        unknown = sorted(set(merged) - {"runtime", "scenario", *_CHECK_KEYS})
        if unknown:
            raise ConfigError(
                f"killpoint: crash.check got unknown option(s) {', '.join(unknown)}; "
                f"choose from runtime, scenario, {', '.join(_CHECK_KEYS)}"
            )
        overrides: dict[str, Any] = {}
        if "runtime" in merged:
            overrides["runtime"] = self._reference(merged["runtime"], "runtime")
        names: list[Any] = []
        if "scenario" in merged:
            names.append(merged["scenario"])
        if "scenarios" in merged:
            given = merged["scenarios"]
            names += _split(given) if isinstance(given, str) else list(given)
        if names:
            overrides["scenarios"] = tuple(self._reference(n, "scenario") for n in names)
        if "modes" in merged:
            modes = merged["modes"]
            overrides["modes"] = _split(modes) if isinstance(modes, str) else tuple(modes)
        for key in ("points", "depth", "keep", "timeout", "seed"):
            if key in merged:
                overrides[key] = merged[key]
        store = merged.get("store")
        overrides["store"] = self.state.store_url() if store is None else store
        self._runs += 1
        overrides["work_root"] = self.tmp_path / f"killpoint-{self._runs}"
        overrides["workers"] = self.state.parallel()
        config = self.state.campaign_config(**overrides)
        _load_runtime(
            config.runtime, lambda why: ConfigError(f"killpoint: runtime {config.runtime!r}: {why}")
        )
        return config

    def _reference(self, obj: Any, kind: str) -> str:
        """An import path for `obj` (workers import runtimes and scenarios by name)."""
        if isinstance(obj, str):
            return obj
        # Where it is defined first (an adapter's factory, a scenario's script), the test
        # module last: the path should read like the user's own code.
        inner = [getattr(obj, attr, None) for attr in ("factory", "script", "tools")]
        names = [getattr(o, "__module__", "") for o in (*inner, obj)]
        candidates = [sys.modules.get(n or "") for n in names] + [self.request.module]
        for module in filter(None, candidates):
            for name, value in vars(module).items():
                if value is obj and not name.startswith("_"):
                    return f"{module.__name__}:{name}"
        raise TypeError(
            f"killpoint: cannot find {obj!r} at the top level of a module; pass the {kind} as "
            "an import path 'package.module:name' (worker processes import it by name)"
        )


@pytest.fixture
def crash(request: pytest.FixtureRequest, tmp_path: Path) -> Crash:
    """Crash-test your own runtime and scenarios: `crash.check("pkg.agents:build",
    scenario="pkg.scenarios:FLOW", points="boundaries")`."""
    return Crash(request, tmp_path)


__all__ = ["Crash", "CrashResults", "KillpointSession", "Settings", "crash"]
