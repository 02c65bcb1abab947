"""The plugin's state for one pytest process: the plan, the engine, the cells' results,
and the reports written at the session's end."""

from __future__ import annotations

import json
import os
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from killpoint.engine.matrix_plan import MatrixPlan, lost_cell, make_plan
from killpoint.plugin import settings as plugin_settings
from killpoint.plugin.items import matrix_items
from killpoint.plugin.keys import CHECKS_ATTR, CHECKS_KEY, MATRIX, REPORT_ATTR, RESULTS_KEY
from killpoint.plugin.settings import Settings
from killpoint.plugin.worker_databases import create_database, drop_database, worker_database_name
from killpoint.values import sentences

if TYPE_CHECKING:
    from killpoint.engine.campaign import CampaignConfig, CampaignResult
    from killpoint.engine.cell_log import Packed
    from killpoint.engine.engine import Engine
    from killpoint.values.cell import CellResult


def warm_forkserver(runtime: str) -> None:
    """Start the engine's forkserver now, preloading `runtime`; its warm-up overlaps with
    what comes next."""
    from multiprocessing import forkserver

    from killpoint.adapters.registry import load_adapter
    from killpoint.errors import AdapterError
    from killpoint.workers.processes import context

    try:
        modules = getattr(load_adapter(runtime), "preload_modules", ())
    except AdapterError:
        modules = ()  # reported where the runtime is used
    context(modules)
    forkserver.ensure_running()


SHOWN_TESTS = 3  # tests named per seed in the summary


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
        # Each cell as it arrives, packed (cell_log): the controller of a long matrix
        # would otherwise hold every whole result until the report.
        self.results: dict[tuple[str, str], Packed] = {}
        # Each crash.check's seed and, if it stopped early, why: (test id, {seed, stopped}).
        self.checks: list[tuple[str, dict[str, Any]]] = []
        self.t0 = time.monotonic()
        self.written: list[str] = []
        self.not_written: list[str] = []
        self._accepted: dict[str, dict[str, Any]] = {}  # runtime -> its accepted groups

    # -- roles --------------------------------------------------------------------------

    @property
    def is_worker(self) -> bool:
        return self.workerinput is not None

    # -- planning -----------------------------------------------------------------------

    def campaign_config(self, **overrides: Any) -> CampaignConfig:
        values: dict[str, Any] = {"seed": self.seed, "workers": os.cpu_count() or 2}
        values.update(overrides)
        return plugin_settings.campaign_config(self.settings, **values)

    def record_mode(self) -> str:
        return self.settings.record_mode

    def start_planning(self) -> None:
        if self._planner is None and self._plan is None and self._wire_plan is None:
            self._planner = threading.Thread(
                target=self._plan_now, name="killpoint-plan", daemon=True
            )
            self._planner.start()

    def _plan_now(self) -> None:
        plan = MatrixPlan()
        try:
            plan = make_plan(
                self.campaign_config(work_root=self.tmp("killpoint-plan")),
                cells=list(self.settings.cells) or None,
            )
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
                store = self.settings.campaign.store
                if store != "sqlite" and self.is_worker:
                    name = worker_database_name(store, self.token, str(self.worker_id))
                    store = create_database(store, name)
                    self._databases.append(name)
                self._store_url = store
            return self._store_url

    def engine(self) -> Engine:
        from dataclasses import replace

        from killpoint.engine.engine import Engine

        with self._lock:
            planned = self._plan.campaign if self._plan is not None else None
        if planned is not None and not self.is_worker:
            return planned.engine  # the planning engine: its baselines are cached
        url = self.store_url()
        with self._lock:
            if self._engine is None:
                config = self.campaign_config().engine_config()
                self._engine = Engine(
                    replace(config, store=url, work_root=self.tmp("killpoint-cells"))
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
        # Only a session that runs the matrix says so here; a crash.check's seed is in its
        # failure message and the terminal summary.
        s = self.settings.campaign
        lines: list[str] = []
        if self.settings.matrix:
            from killpoint.stores import shown

            lines.append(
                f"killpoint: seed {self.seed} (replay with --crash-seed {self.seed} or last)"
            )
            lines.append(
                f"killpoint: crash matrix runtime={s.runtime} "
                f"scenarios={','.join(s.scenarios) or 'all'} modes={','.join(s.modes) or 'all'} "
                f"points={s.points} depth={s.depth} store={shown(s.store)} keep={s.keep}"
            )
        return lines

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        # Before xdist's (trylast) sessionstart spawns the workers: plan meanwhile.
        if self.settings.matrix and not self.is_worker:
            self.start_planning()
        elif self.settings.matrix:
            warm_forkserver(
                self.settings.campaign.runtime
            )  # it preloads while this worker collects

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
        checks = item.stash.get(CHECKS_KEY, None)
        if call.when == "call" and checks:
            setattr(report, CHECKS_ATTR, json.dumps(checks))
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        # "???": the report xdist makes for an item whose worker crashed.
        if self.is_worker or report.when not in ("call", "???"):
            return
        from killpoint.engine.cell_log import pack
        from killpoint.values.cell import CellResult

        checks = getattr(report, CHECKS_ATTR, None)
        if checks:
            self.checks += [(report.nodeid, check) for check in json.loads(checks)]
        data = getattr(report, REPORT_ATTR, None)
        if data:
            for entry in json.loads(data):
                result = CellResult.from_json(entry)
                self.results[(report.nodeid, result.id)] = pack(result)
        elif report.failed and report.nodeid.startswith(f"{MATRIX}::"):
            # The worker running this cell died (xdist reports the crash): count it.
            cell_id = report.nodeid.partition("::")[2]
            lost = lost_cell(cell_id, str(report.longrepr)[-2000:])
            if lost is not None:
                self.results[(report.nodeid, cell_id)] = pack(lost)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session, exitstatus: int) -> None:
        kill_workers()  # nothing of ours outlives the session (each cell reaps its own)
        if self.is_worker:
            self._drop_databases(self._databases)
            return
        if self.settings.campaign.store != "sqlite" and self._nodes:
            # Backstop: a worker that died could not drop its database.
            store = self.settings.campaign.store
            names = [worker_database_name(store, self.token, n) for n in self._nodes]
            self._drop_databases(names)
        if self.ran_nothing() and exitstatus == pytest.ExitCode.OK:
            # Every row or point skipped: a CI job that asked for cells is not green.
            session.exitstatus = pytest.ExitCode.NO_TESTS_COLLECTED
        if self.settings.json or self.settings.report:
            self.write_reports(session, exitstatus)

    def ran_nothing(self) -> bool:
        """The matrix planned no cell (and no row failed to plan): everything was skipped."""
        plan = self._plan if self.settings.matrix else None
        return plan is not None and not (plan.cells or plan.broken or plan.error)

    def _drop_databases(self, names: list[str]) -> None:
        for name in names:
            drop_database(self.settings.campaign.store, name)

    def accepted(self, runtime: str | None = None) -> dict[str, Any]:
        """The accepted finding groups (--crash-accept) for `runtime` (the session's by
        default), read once each: `builtin` is each runtime's own file, so a crash.check
        of another runtime is held to that one's."""
        runtime = runtime or self.settings.campaign.runtime
        if runtime not in self._accepted:
            from killpoint.engine.acceptances import accepted_groups

            self._accepted[runtime] = accepted_groups(self.settings.accept, runtime)
        return self._accepted[runtime]

    def campaign_result(self, exitstatus: int) -> CampaignResult:
        from killpoint.engine.campaign import CampaignResult, cell_order
        from killpoint.engine.cell_log import CellLog

        plan = self._plan if self.settings.matrix else None
        log = CellLog.of_packed(self.results.values())
        log.sort(key=cell_order)
        cells = log.heads()
        # Without the matrix, every cell came from a crash.check: the header says what they
        # ran (their runtime, modes and points), not the session's defaults.
        config = self.campaign_config() if plan is not None else self._ran_config(cells)
        result = CampaignResult(config, self.seed, accepted=self.accepted(config.runtime))
        result.cells = log
        result.seconds = time.monotonic() - self.t0
        result.interrupted = exitstatus == pytest.ExitCode.INTERRUPTED
        result.planned = len(cells)
        if plan is not None:
            result.baselines = plan.baselines
            result.skipped = plan.skipped_rows
            planned = set(plan.cells)
            result.planned = len(plan.cells) + sum(c.id not in planned for c in cells)
        return result

    def _ran_config(self, cells: list[CellResult]) -> CampaignConfig:
        from killpoint import kinds

        if not cells:
            return self.campaign_config()
        ran = {p.split(":", 1)[0] for c in cells for p in c.schedule}
        return self.campaign_config(
            runtime=",".join(dict.fromkeys(c.runtime for c in cells)),
            scenarios=tuple(dict.fromkeys(c.scenario for c in cells)),
            modes=tuple(dict.fromkeys(c.mode for c in cells)),
            points=",".join(k for k in kinds.REGISTRY if k in ran) or "all",
        )

    def write_reports(self, session: pytest.Session, exitstatus: int) -> None:
        from killpoint.report.document import dumps, to_document, write
        from killpoint.report.html import render_report
        from killpoint.report.redact import redact
        from killpoint.report.targets import Target

        command = ["pytest", *self.config.invocation_params.args]
        document = to_document(self.campaign_result(exitstatus), command=command)
        document["pytest"] = {"exitstatus": int(exitstatus), "seed": self.seed}
        for path, make in (
            (self.settings.json, lambda: dumps(document)),
            (self.settings.report, lambda: redact(render_report(document))),
        ):
            if path is None:
                continue
            target = Target(path)
            target.check()
            fallback = write(target, make())
            if fallback is not None:
                self.not_written.append(f"{path} (written to {fallback} instead)")
            self.written.append(str(fallback or path))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from killpoint.plugin.masking import MaskedTerminal

        terminalreporter = MaskedTerminal(terminalreporter)  # run content: masked, visible
        if not self.is_worker and self.ran_nothing():
            assert self._plan is not None
            reasons = list(dict.fromkeys(why for _, why in self._plan.skipped))
            terminalreporter.write_sep("-", "killpoint")
            terminalreporter.write_line(
                f"killpoint: no cell ran (exit 5): {sentences.count(len(self._plan.skipped), 'skip')}, "
                f"for {sentences.count(len(reasons), 'reason')}:"
                if reasons
                else "killpoint: no cell ran (exit 5): the selection planned none"
            )
            for why in reasons:
                terminalreporter.write_line(f"  {why}")
        if self.is_worker or not self.results:
            return
        from killpoint.report.text import cut
        from killpoint.values.sentences import count

        result = self.campaign_result(int(pytest.ExitCode.OK))
        figures = result.summary()
        terminalreporter.write_sep("-", "killpoint")
        terminalreporter.write_line(
            f"{count(figures['cells'], 'cell')}, {figures['unexpected']} unexpected"
            + (f" in {count(figures['groups'], 'group')}" if figures["unexpected"] else "")
            + (f", {figures['accepted']} accepted" if figures["accepted"] else "")
            + (f", {figures['low']} of low severity only" if figures.get("low") else "")
            + f", {count(figures['expected_losses'], 'expected loss')}; {self._seeds()}"
        )
        for nodeid, check in self.checks:
            if check["stopped"]:
                terminalreporter.write_line(f"stopped: {nodeid}: {check['stopped']}")
        failing = [g for g in result.groups() if g.failing]
        for n, g in enumerate(failing[:20], start=1):
            terminalreporter.write_line(
                f"{n}. {g.heading}: {count(len(g.cells), 'cell')}, {g.verdict}"
            )
            terminalreporter.write_line(f"   e.g. {g.example_cell}: {cut(g.example)}")
            terminalreporter.write_line(f"   replay: {g.replay}")
        if len(failing) > 20:
            terminalreporter.write_line(
                f"... and {count(len(failing) - 20, 'more group')} in the JSON"
            )
        for g in result.failing_rows:
            terminalreporter.write_line(
                f"without a crash: {g.kind}: {count(len(g.cells), 'row')}, {g.verdict}; "
                f"e.g. {g.example_cell}: {cut(g.example)}"
            )
        for line in self.not_written:
            terminalreporter.write_line(f"killpoint: could not write {line}")
        if self.written:
            terminalreporter.write_line(f"written: {', '.join(self.written)}")

    def _seeds(self) -> str:
        """The seed the cells ran with; each test's when its crash.check chose another."""
        tests: dict[int, list[str]] = {self.seed: ["the matrix"]} if self.settings.matrix else {}
        for nodeid, check in self.checks:
            tests.setdefault(check["seed"], []).append(nodeid)
        if len(tests) <= 1:
            return f"seed {next(iter(tests), self.seed)}"
        return "seeds: " + "; ".join(
            f"{seed} ({', '.join(names[:SHOWN_TESTS])}"
            + (f" and {len(names) - SHOWN_TESTS} more" if len(names) > SHOWN_TESTS else "")
            + ")"
            for seed, names in sorted(tests.items())
        )

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        kill_workers()


def kill_workers() -> None:
    """Kill engine workers still registered in this process (none unless interrupted)."""
    processes = sys.modules.get("killpoint.workers.processes")
    if processes is not None:  # never imported: nothing was started
        processes.kill_all()
