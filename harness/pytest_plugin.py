"""killpoint's pytest plugin: the crash matrix as test items, a `killpoint` marker and a
`crash` fixture. A thin layer: the engine (killpoint.engine, killpoint.campaign) does the work
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

import json
import os
import secrets
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Generator
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from .crash_fixture import Crash, CrashResults
from .failure_messages import cell_failure
from .matrix_plan import MatrixPlan, lost_cell, make_plan
from .option_values import load_runtime, split_list
from .plugin_keys import MARKER, RESULTS_KEY, SESSION_KEY
from .worker_databases import create_database, drop_database, worker_database_name

if TYPE_CHECKING:
    from .campaign import CampaignConfig
    from .cell import CellResult
    from .engine import Engine

KEEP = ("none", "failed", "all")
CACHE_SEED = "killpoint/seed"
MATRIX = "killpoint"  # the node id of the matrix collector; items are "killpoint::CELL"
REPORT_ATTR = "killpoint"  # the report attribute carrying the cells' results (JSON)

# (option, ini name, ini type, metavar, help)
OPTIONS: tuple[tuple[str, str, str, str | None, str], ...] = (
    ("--crash-matrix", "crash_matrix", "bool", None, "collect the crash matrix as test items"),
    ("--crash-runtime", "crash_runtime", "string", "RUNTIME",
     "runtime under test: 'reference' or 'package.module:adapter' (default: reference)"),
    ("--crash-scenarios", "crash_scenarios", "string", "NAMES",
     "comma-separated scenarios: built-in names, 'random:SEED' or 'package.module:SCENARIO' "
     "(default: every built-in)"),
    ("--crash-modes", "crash_modes", "string", "MODES",
     "comma-separated checkpoint modes of the runtime (default: every mode it can run)"),
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
    modes: tuple[str, ...] = ()  # empty: every mode the runtime can run
    points: str = "all"
    depth: int = 1
    seed: str | None = None  # a number, "last", or None (choose one)
    store: str = "sqlite"
    report: Path | None = None
    json: Path | None = None
    keep: str = "failed"
    sources: dict[str, str] = field(default_factory=dict, compare=False)


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
            values[key] = split_list(str(raw))
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
        adapter = load_runtime(
            settings.runtime, lambda why: _usage(settings, "runtime", settings.runtime, why)
        )
        declared = [m.name for m in adapter.modes]
        if "modes" in given and not settings.modes:
            raise _usage(settings, "modes", "", f"no modes; choose from {', '.join(declared)}")
        for mode in settings.modes:
            if mode not in declared:
                raise _usage(
                    settings,
                    "modes",
                    mode,
                    f"not a mode of runtime {settings.runtime!r}; choose from {', '.join(declared)}",
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
                f"scenarios={','.join(s.scenarios) or 'all'} modes={','.join(s.modes) or 'all'} "
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
            terminalreporter.write_line(f"            replay: {c.replay}")
        if len(bad) > 20:
            terminalreporter.write_line(f"... and {len(bad) - 20} more")
        if self.written:
            terminalreporter.write_line(f"written: {', '.join(self.written)}")

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        _kill_workers()


def _kill_workers() -> None:
    """Kill engine workers still registered in this process (none unless interrupted)."""
    processes = sys.modules.get("killpoint.processes")
    if processes is not None:  # never imported: nothing was started
        processes.kill_all()


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
        result = state.engine().run_cell(Cell.parse(self.name))
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


# -- the `crash` fixture (its work: killpoint.crash_fixture) ----------------------------------


@pytest.fixture
def crash(request: pytest.FixtureRequest, tmp_path: Path) -> Crash:
    """Crash-test your own runtime and scenarios: `crash.check("pkg.agents:build",
    scenario="pkg.scenarios:FLOW", points="boundaries")`."""
    return Crash(request, tmp_path)


__all__ = ["Crash", "CrashResults", "KillpointSession", "Settings", "crash"]
