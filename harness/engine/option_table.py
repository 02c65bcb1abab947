"""Every option of a campaign, declared once: its reader, its one default, one help line,
and the fronts that take it.

The fronts are built from this table: `killpoint matrix`'s flags (killpoint.cli.matrix),
the pytest options and ini keys (killpoint.plugin.settings), the keys of
`[tool.killpoint]` (killpoint.cli.project_config), the keywords of `crash.check()`
(killpoint.plugin.crash_fixture), and the fields of CampaignConfig
(killpoint.engine.options), whose defaults are read from here. So a front takes every
option the table gives it, reads it with the same reader and says the same sentence for
the same bad value. Where a front leaves an option out, or takes it otherwise, `why`
says so.

Adding an option: an `Option(...)` below, and its field on CampaignConfig (and on
EngineConfig, where the engine reads it) in killpoint.engine.options.

`reference()` lists the options with their help, default and every name they go by: what
a generated option reference reads.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from killpoint.adapters.registry import RUNTIME_HELP
from killpoint.engine import option_values as read
from killpoint.errors import ConfigError, flag_of

# The fronts an option can be given through.
CLI = "cli"  # `killpoint matrix --fs-ops 4`
PYTEST = "pytest"  # `pytest --crash-fs-ops=4`, or `crash_fs_ops = 4` in the ini file
PROJECT = "project"  # `fs-ops = 4` in pyproject.toml's [tool.killpoint]
CHECK = "check"  # `crash.check(fs_ops=4)` in a test
FRONTS = (CLI, PYTEST, PROJECT, CHECK)

# What a value in [tool.killpoint] must be (TOML has types; the other fronts give text).
TEXT, NUMBER, WHOLE, NAMES, PATH = "a string", "a number", "an integer", "names", "a path"
WORD_OR_WHOLE, BOOL = "a string or an integer", "a boolean"
PATH_OR_BUILTIN = "a path, or 'builtin'"

FAIL_ON = ("high", "medium", "low")  # severities a run can fail on (values.findings)
KEEP = ("none", "failed", "all")
KILLS = ("fast", "real")  # killpoint.engine.row_trace
ORDERS = ("informative", "plan")  # killpoint.engine.run_order
RECORD_MODES = ("none", "once", "rewrite")  # killpoint.plugin.cassettes


@dataclass(frozen=True)
class Option:
    """One option. `sets`: the CampaignConfig field it sets ("": the option's own name;
    None: a front's own option, such as where a report goes). `default`: the value when no front gives one (a
    callable: computed then); `shown`: the default in words, where the value does not say
    it. `why`: why a front leaves the option out, or takes it otherwise."""

    name: str
    help: str
    reader: read.Reader = read.text
    default: Any = None
    shown: str | Callable[[], str] | None = None
    fronts: frozenset[str] = frozenset(FRONTS)
    why: str = ""
    sets: str | None = ""
    metavar: str | None = None
    toml: str = TEXT
    notes: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))
    # Fronts on which leaving the option out means "none" (pytest writes no JSON unless
    # asked), so their help names no default.
    unset_on: frozenset[str] = frozenset()

    def __post_init__(self) -> None:
        if self.sets == "":
            object.__setattr__(self, "sets", self.name)
        unknown = set(self.fronts) - set(FRONTS)
        if unknown:
            raise ConfigError(f"killpoint: option {self.name}: no front {sorted(unknown)}")

    def parse(self, value: Any) -> Any:
        """The checked value; OptionError names what is wrong."""
        return self.reader(self.name, value)

    def default_value(self) -> Any:
        return self.default() if callable(self.default) else self.default

    def default_text(self) -> str | None:
        """The default as the help says it (None: the option's absence is no value)."""
        if self.shown is not None:
            return self.shown() if callable(self.shown) else self.shown
        value = self.default_value()
        return None if value is None or value is False else str(value)

    def described(self, front: str = CLI) -> str:
        """The help line: what it does, what a front says of it, its default."""
        note = self.notes.get(front)
        default = None if front in self.unset_on else self.default_text()
        return (
            self.help
            + (f"; {note}" if note else "")
            + (f" (default: {default})" if default is not None else "")
        )

    # -- its names, one per front -------------------------------------------------------

    @property
    def flag(self) -> str:
        return flag_of(self.name)

    @property
    def pytest_flag(self) -> str:
        return "--crash-" + self.name.replace("_", "-")

    @property
    def ini(self) -> str:
        return "crash_" + self.name

    @property
    def key(self) -> str:
        """Its key in [tool.killpoint]."""
        return self.name.replace("_", "-")

    def names(self) -> dict[str, str]:
        """Its name on each front that takes it (pytest's twice: its flag, its ini key)."""
        by = {
            CLI: [(CLI, self.flag)],
            PYTEST: [(PYTEST, self.pytest_flag), ("ini", self.ini)],
            PROJECT: [(PROJECT, self.key)],
            CHECK: [(CHECK, f"{self.name}=")],
        }
        return {
            where: name for front in FRONTS if front in self.fronts for where, name in by[front]
        }


def _fronts(*names: str) -> frozenset[str]:
    return frozenset(names)


# Why pytest takes no option for a file rendered from the report (one JSON, many outputs).
_RENDERED_LATER = (
    "pytest: the session's summary is pytest's own; `killpoint report` renders its "
    "--crash-json to this format"
)


OPTIONS: tuple[Option, ...] = (
    Option(
        "runtime",
        f"runtime under test: {RUNTIME_HELP}",
        default="reference",
        metavar="RUNTIME",
        notes={CHECK: "or crash.check's first argument, an adapter or an import path"},
    ),
    Option(
        "scenarios",
        "comma-separated scenarios: built-in names, 'random:SEED', 'cassette:PATH' (`killpoint "
        "record`) or 'package.module:SCENARIO'",
        read.names,
        default=(),
        shown="every built-in",
        metavar="NAMES",
        toml=NAMES,
        notes={CHECK: "or scenario=, one scenario or an object"},
    ),
    Option(
        "modes",
        "comma-separated checkpoint modes of the runtime",
        read.names,
        default=(),
        shown="every mode it can run; the reference runtime's: runs, tool-batch, tool",
        metavar="MODES",
        toml=NAMES,
    ),
    Option(
        "points",
        "boundaries | kills | faults | all | power-loss | random:N | kinds or points, "
        "comma-separated",
        read.points,
        default=read.PointSelection("all"),
        metavar="POINTS",
    ),
    Option(
        "depth",
        "1, or 2: crash the resumed run too",
        read.whole(1, 2),
        default=1,
        metavar="1|2",
        toml=WHOLE,
    ),
    Option(
        "seed",
        "seed for random points (printed when chosen)",
        read.whole(0),
        shown="a new one",
        metavar="SEED",
        toml=WHOLE,
        notes={PYTEST: "'last' reuses the previous session's"},
        why="pytest also takes 'last': the previous session's seed, from pytest's cache",
    ),
    Option(
        "store",
        "sqlite, or a postgresql+psycopg:// URL",
        read.store,
        default="sqlite",
        metavar="STORE",
        notes={PYTEST: "each xdist worker gets its own database"},
    ),
    Option(
        "workers",
        "cells at work at once; with 2 or more, a cell waiting for a lease to run out lets "
        "another work meanwhile",
        read.workers,
        default=read.default_workers,
        shown=lambda: f"twice the cores, here {read.default_workers()}",
        fronts=_fronts(CLI, PROJECT),
        why="pytest: pytest-xdist's -n spreads the matrix's items over processes, and "
        "crash.check runs as many cells at once as its process has cores",
        metavar="N",
        toml=WHOLE,
    ),
    Option(
        "timeout",
        "seconds per worker before 'hung'",
        read.seconds,
        default=30.0,
        shown="30",
        metavar="SECONDS",
        toml=NUMBER,
    ),
    Option(
        "keep",
        "keep the cells' folders (store, ledger, worker logs): none, failed or all",
        read.choice(KEEP, "not a keep policy"),
        default="failed",
        metavar="none|failed|all",
    ),
    Option(
        "work_dir",
        "where to make this run's folder for the cells' stores, ledgers and logs",
        read.path,
        shown="/dev/shm, or TMPDIR when set or /dev/shm is small",
        sets="work_parent",
        fronts=_fronts(CLI, PROJECT),
        why="pytest and crash.check keep the cells' folders in pytest's own temporary "
        "folder (--basetemp)",
        metavar="DIR",
        toml=PATH,
    ),
    Option(
        "work_root",
        "the folder the cells' folders go right into (no killpoint-* folder made)",
        read.path,
        fronts=frozenset(),
        why="killpoint's own: crash.check gives each check a folder under its test's tmp_path",
    ),
    Option(
        "kills",
        "fast: a row's kill cells resume from one traced worker's copies of the state at each "
        "point; real: each cell starts and SIGKILLs a worker of its own",
        read.choice(KILLS, "not a way to kill"),
        default="fast",
        fronts=_fronts(CLI, PROJECT, CHECK),
        why="pytest: each matrix item runs its one cell on its own, so there is no row to "
        "trace (crash.check takes kills=, and runs fast unless told: the campaign "
        "`killpoint matrix` runs, judged the same cell by cell)",
        metavar="fast|real",
    ),
    Option(
        "model_behaviour",
        "how the model answers every turn asked again after a crash, in every cell: "
        "regenerate-ids, reorder, respell or replan",
        read.behaviour,
        shown="as the first time",
        metavar="BEHAVIOUR",
    ),
    Option(
        "shard",
        "run only shard K of N (cells by a stable hash of their id; give every shard the same "
        "seed), then `killpoint merge` the shards' JSON",
        read.shard,
        fronts=_fronts(CLI, PYTEST),
        why="[tool.killpoint]: every shard's job reads the same file, so each job names its "
        "own shard; crash.check: a check is one test's whole campaign",
        metavar="K/N",
    ),
    Option(
        "cut",
        "power-loss points: which unsynced writes the cut keeps: synced (none), torn-op (each "
        "file's last write torn at a sector; torn-op:byte at a byte), torn-seq (a seeded "
        "subset), reorder (a prefix per file and per directory); docs/powerloss.md",
        read.cut,
        default="synced",
        metavar="MODEL",
    ),
    Option(
        "fs_ops",
        "fs-op points (points fs-ops): which store-file operations of each checkpoint get a "
        "point: all, syncs (fsync, fdatasync) or a number spread evenly; docs/powerloss.md",
        read.fs_ops,
        default="all",
        metavar="all|syncs|N",
        toml=WORD_OR_WHOLE,
    ),
    Option(
        "order",
        "informative: one cell of each row and kind first, then the cells that failed in "
        "the last report, then the rest, drawn from the seed; plan: row after row",
        read.choice(ORDERS, "not a cell order"),
        default="informative",
        fronts=_fronts(CLI, PROJECT, CHECK),
        why="pytest: each cell is a test item, run in pytest's own order (pytest-xdist's "
        "schedulers, -p randomly)",
        metavar="informative|plan",
    ),
    Option(
        "fail_fast",
        "stop at the first unexpected cell: the cells at work are stopped, the rest are "
        "reported not run",
        read.flag,
        default=False,
        fronts=_fronts(CLI, PROJECT, CHECK),
        why="pytest: its own -x (--exitfirst) stops at the first failed item",
        toml=BOOL,
    ),
    Option(
        "budget",
        "run cells until this much time has passed (90s, 5m, 1h), then stop and report "
        "what was covered: cells run of planned, kinds covered per row; the rest not run; "
        "none: no budget",
        read.budget,
        shown="none: every cell",
        fronts=_fronts(CLI, PROJECT, CHECK),
        why="pytest: each cell is a test item; pytest runs every item it collected",
        metavar="TIME",
        toml=WORD_OR_WHOLE,
    ),
    # -- where the results go, and what fails the run: the fronts' own ---------------------
    Option(
        "json",
        "where the JSON goes",
        read.path,
        unset_on=_fronts(PYTEST),
        shown="reports/RUNTIME-matrix.json",
        sets=None,
        fronts=_fronts(CLI, PYTEST, PROJECT),
        notes={PYTEST: "written only when given"},
        why="pytest writes a report only when asked; crash.check's results are the test's",
        metavar="PATH",
        toml=PATH,
    ),
    Option(
        "report",
        "where the HTML crash-matrix report goes",
        read.path,
        unset_on=_fronts(PYTEST),
        shown="reports/RUNTIME-matrix.html",
        sets=None,
        fronts=_fronts(CLI, PYTEST, PROJECT),
        notes={PYTEST: "written only when given"},
        why="pytest writes a report only when asked; crash.check's results are the test's",
        metavar="PATH",
        toml=PATH,
    ),
    # The other files a campaign's results render to (killpoint.report.renderers), each
    # from the JSON document; `merge` and `report` offer the same options, from here.
    Option(
        "junit",
        "also write JUnit XML to this path: a test case per cell, classed by row",
        read.path,
        sets=None,
        fronts=_fronts(CLI, PROJECT),
        why="pytest: its own --junitxml writes a case per cell",
        metavar="PATH",
        toml=PATH,
    ),
    Option(
        "markdown",
        "also write a Markdown summary (causes, failing groups) to this path",
        read.path,
        sets=None,
        fronts=_fronts(CLI, PROJECT),
        why=_RENDERED_LATER,
        metavar="PATH",
        toml=PATH,
    ),
    Option(
        "text",
        "also write the terminal's summary as plain text to this path",
        read.path,
        sets=None,
        fronts=_fronts(CLI, PROJECT),
        why=_RENDERED_LATER,
        metavar="PATH",
        toml=PATH,
    ),
    Option(
        "annotations",
        "also write GitHub Actions `::error` annotations, one line per failing group, to this path",
        read.path,
        sets=None,
        fronts=_fronts(CLI, PROJECT),
        why=_RENDERED_LATER,
        metavar="PATH",
        toml=PATH,
    ),
    Option(
        "accept",
        "a TOML file of accepted finding groups: shown, counted apart, not failing; "
        "`builtin`: the groups the runtime's documentation calls by design",
        read.accept,
        sets=None,
        fronts=_fronts(CLI, PYTEST, PROJECT),
        why="crash.check holds its cells to the session's accepted groups (--crash-accept)",
        metavar="FILE|builtin",
        toml=PATH_OR_BUILTIN,
    ),
    Option(
        "fail_on",
        "fail (exit 1) on any finding group of this severity or above, verdict or not",
        read.choice(FAIL_ON, "not a severity"),
        shown="on an unexpected verdict",
        sets=None,
        fronts=_fronts(CLI, PROJECT),
        why="pytest: each item passes or fails on its own cell's verdict",
        metavar="high|medium|low",
    ),
    Option(
        "rerun_failed",
        "rerun only the unexpected cells of an earlier report (its runtime, store kind, "
        "scenarios, modes and seed)",
        sets=None,
        fronts=_fronts(CLI),
        why="one run's: a file that always reran the last failures would never run the rest; "
        "pytest has --last-failed",
        metavar="REPORT.json",
    ),
    # -- cassettes (`killpoint record`) in pytest: killpoint.plugin.cassettes ---------------
    Option(
        "cassette",
        "a cassette to crash-test (`killpoint record`), as scenario='cassette:PATH'; a "
        "relative path is read from the test file's folder",
        read.text,
        sets=None,
        fronts=_fronts(CHECK),
        why="crash.check's own (the `killpoint` marker takes it too): the command line and "
        "the session name cassettes as scenarios, --scenarios cassette:PATH",
        metavar="PATH",
        toml=PATH,
    ),
    Option(
        "record_mode",
        "none: replay cassettes only (a missing one fails the test); once: record a missing "
        "cassette against the provider, replay the rest; rewrite: record every cassette again",
        read.choice(RECORD_MODES, "not a record mode"),
        default="none",
        sets=None,
        fronts=_fronts(PYTEST),
        why="pytest's: `killpoint record` records on the command line, once per cassette",
        metavar="none|once|rewrite",
    ),
    Option(
        "matrix",
        "collect the crash matrix as test items",
        read.flag,
        default=False,
        sets=None,
        fronts=_fronts(PYTEST),
        why="the command line's `killpoint matrix` is the matrix itself",
        toml=BOOL,
    ),
)

# The options that ask for a file rendered from the report (killpoint.report.renderers).
FILES_RENDERED = ("junit", "markdown", "text", "annotations")

BY_NAME: Mapping[str, Option] = MappingProxyType({o.name: o for o in OPTIONS})
BY_FIELD: Mapping[str, Option] = MappingProxyType(
    {o.sets: o for o in OPTIONS if o.sets is not None}
)


def option(name: str) -> Option:
    return BY_NAME[name]


def on(front: str) -> tuple[Option, ...]:
    """The options a front takes, in the table's order."""
    return tuple(o for o in OPTIONS if front in o.fronts)


def campaign() -> tuple[Option, ...]:
    """The options that set a CampaignConfig field."""
    return tuple(o for o in OPTIONS if o.sets is not None)


def default_of(field_name: str) -> Any:
    """A dataclass field whose default is the table's (for CampaignConfig, EngineConfig)."""
    return field(default_factory=BY_FIELD[field_name].default_value)


@dataclass(frozen=True)
class Reference:
    """One option as a reference page shows it."""

    name: str
    help: str
    default: str | None
    toml: str
    names: dict[str, str]  # where -> its name there: cli `--fs-ops`, pytest `--crash-fs-ops`,
    # ini `crash_fs_ops`, project `fs-ops` ([tool.killpoint]), check `fs_ops=` (crash.check)
    why: str  # why a front leaves it out or takes it otherwise ("" when none does)


def reference() -> Iterator[Reference]:
    """Each option a user can give, with its help, default and its names on every front."""
    for o in OPTIONS:
        if o.fronts:
            yield Reference(o.name, o.help, o.default_text(), o.toml, o.names(), o.why)


__all__ = [
    "BY_FIELD",
    "BY_NAME",
    "CHECK",
    "CLI",
    "FILES_RENDERED",
    "FRONTS",
    "OPTIONS",
    "PATH_OR_BUILTIN",
    "PROJECT",
    "PYTEST",
    "RECORD_MODES",
    "Option",
    "Reference",
    "campaign",
    "default_of",
    "on",
    "option",
    "reference",
]
