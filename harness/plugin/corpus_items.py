"""The pytest face of a crash-state corpus: `--crash-corpus DIR` collects one item per
kept state (node id `killpoint-corpus/<state id>`, stable across runs and hosts: it is
read from the corpus's manifest, never from a run), and `crash.check_upgrade(corpus=DIR)`
checks a whole corpus inside one test.

A state item fails when its group fails (`corpus check`'s exit 1); `fails-closed` passes:
refusing an old state with a clear error, and changing nothing, is allowed. Baselines are
run once per row in each process that runs items.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from killpoint.corpus.check import Checker, CheckResult, StateResult

NODE = "killpoint-corpus"
OPTION = "--crash-corpus"
OPTIONS = (OPTION, "--crash-scenario-version")


def addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("killpoint", "killpoint crash matrix")
    group.addoption(
        OPTION,
        default=None,
        metavar="DIR",
        dest="crash_corpus",
        help="check every state of a crash-state corpus as a test item (`killpoint corpus "
        "record`); with --crash-runtime and --crash-scenario-version",
    )
    group.addoption(
        OPTIONS[1],
        default=None,
        metavar="VERSION",
        dest="crash_scenario_version",
        help="resume the corpus's states under this version of their scenario",
    )


class UpgradeFailed(Exception):
    def __init__(self, result: StateResult) -> None:
        super().__init__(result.id)
        self.result = result


def failure_text(result: StateResult) -> str:
    """A failing state in a few lines, each one line whatever the state's sentences hold."""
    from killpoint.values.shown import line

    lines = [f"killpoint: {result.id}: {result.group}: {result.sentence}"]
    lines += [f"  {d}" for d in result.details[:8]]
    lines.append(f"  recorded as {result.recorded_as}, checked as {result.checked_as}")
    return "\n".join(line(each) for each in lines)


class CorpusState(pytest.Item):
    """One kept state, resumed with the code here."""

    def __init__(self, *, checker: Checker, folder: Path, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.checker = checker
        self.folder = folder

    def runtest(self) -> None:
        from killpoint.corpus import manifest as mf
        from killpoint.errors import CorpusError
        from killpoint.values.shown import line

        try:
            result = self.checker.check(self.folder, mf.read_state(self.folder))
        except CorpusError as exc:  # a state that is no data: refused, never run
            pytest.fail(line(str(exc)), pytrace=False)
        self.user_properties += [("group", result.group), ("checked_as", result.checked_as)]
        if result.failing:
            raise UpgradeFailed(result)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> Any:
        if isinstance(excinfo.value, UpgradeFailed):
            return failure_text(excinfo.value.result)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Path, int, str]:
        return self.path, 0, f"killpoint corpus state {self.name}"


class CorpusCollector(pytest.Collector):
    def __init__(self, *, checker: Checker, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.checker = checker

    def collect(self) -> list[pytest.Item]:
        return [
            CorpusState.from_parent(self, name=info.id, checker=self.checker, folder=folder)
            for folder, info in self.checker.states()
        ]


class CorpusPlugin:
    """Registered when --crash-corpus is given."""

    def __init__(self, config: pytest.Config, corpus: Path) -> None:
        from killpoint.corpus.check import Checker

        runtime = config.getoption("crash_runtime", None) or "reference"
        self.checker = Checker(
            corpus,
            runtime,
            scenario_version=config.getoption("crash_scenario_version"),
            store=config.getoption("crash_store", None) or "sqlite",
        )
        self.checker.validate()

    @pytest.hookimpl(tryfirst=True)
    def pytest_collection_modifyitems(
        self, session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        parent = CorpusCollector.from_parent(session, name=NODE, nodeid=NODE, checker=self.checker)
        report = session.ihook.pytest_make_collect_report(collector=parent)
        report.__dict__.pop("call", None)
        session.ihook.pytest_collectreport(report=report)
        found = [x for x in (report.result or []) if isinstance(x, pytest.Item)]
        for item in found:
            session.ihook.pytest_itemcollected(item=item)
        items.extend(found)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """The stores made for states that could not be removed (the server gone), named
        with the statement that drops each."""
        from killpoint.plugin.masking import MaskedTerminal

        self.checker.engine.sweep()
        left = self.checker.engine.retry_leftovers()
        if left:
            terminal = MaskedTerminal(terminalreporter)
            terminal.write_sep("-", "killpoint corpus")
            for each in left:
                terminal.write_line(f"killpoint: {each}")

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        self.checker.engine.sweep()


def configure(config: pytest.Config) -> None:
    """Register the corpus's items when --crash-corpus names a corpus; a folder that is
    none is a usage error in one line."""
    folder = config.getoption("crash_corpus", None)
    if not folder:
        return
    from killpoint.errors import CorpusError, ScenarioRefError, StoreError

    try:
        plugin = CorpusPlugin(config, Path(folder))
    except (CorpusError, ScenarioRefError, StoreError) as exc:
        from killpoint.plugin.settings import masked_usage

        raise masked_usage(str(exc)) from None
    config.pluginmanager.register(plugin, "killpoint-corpus")


def check_upgrade(
    corpus: str | Path,
    runtime: str = "reference",
    *,
    scenario_version: str | None = None,
    timeout: float = 30.0,
    work_parent: Path | None = None,
    store: str = "sqlite",
) -> CheckResult:
    """Check every state of `corpus` (restored into `store`: sqlite, or the PostgreSQL
    server of a corpus recorded on one); fail the test with one line per failing state."""
    __tracebackhide__ = True
    from killpoint.corpus.check import check
    from killpoint.errors import CorpusError, ScenarioRefError, StoreError
    from killpoint.values.shown import line

    problem = None
    leftovers: list[Any] = []
    try:
        result = check(
            Path(corpus), runtime, scenario_version=scenario_version, timeout=timeout,
            work_parent=work_parent, store=store, leftovers=leftovers,
        )  # fmt: skip
    except (CorpusError, ScenarioRefError, StoreError) as exc:
        problem = line(f"{exc} (in crash.check_upgrade)")
    # A store that could not be removed stays on the server: the test says so and fails.
    left = [line(f"killpoint: {each}") for each in leftovers]
    if problem is not None:
        pytest.fail("\n".join([problem, *left]), pytrace=False)
    if result.failing or left:
        pytest.fail("\n".join([*(failure_text(s) for s in result.failing), *left]), pytrace=False)
    return result


__all__ = ["CorpusPlugin", "CorpusState", "addoption", "check_upgrade", "configure"]
