"""One option model: every campaign option parsed and checked here, once, for the CLI, the
pytest plugin and `crash.check` alike.

`CampaignConfig.from_options(...)` takes the values as a user gives them (text from a
command line or an ini file, or Python values) and returns a checked configuration, or
raises OptionError naming the option, the value, why, and the choices. Each front end
prints that error with its own name for the option (`--modes`, `--crash-modes`,
`ini option crash_modes`, `crash.check(modes=...)`); the rest of the sentence is the
same everywhere.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from killpoint.engine.cell_host import EngineConfig
from killpoint.errors import KillpointError
from killpoint.redaction import remember_url
from killpoint.values.sentences import plural_of

if TYPE_CHECKING:
    from killpoint.values.points import CrashPoint
    from killpoint.values.shard import Shard

KEEP = ("none", "failed", "all")
KILLS = ("fast", "real")  # --kills: see killpoint.engine.row_trace
# What each option is called on the command line (the CLI's flags).
FLAGS = {
    "runtime": "--runtime",
    "scenarios": "--scenarios",
    "modes": "--modes",
    "points": "--points",
    "depth": "--depth",
    "seed": "--seed",
    "store": "--store",
    "workers": "--workers",
    "timeout": "--timeout",
    "keep": "--keep",
    "work_parent": "--work-dir",
    "work_root": "--work-dir",
    "model_behaviour": "--model-behaviour",
    "shard": "--shard",
    "cut": "--cut",
    "fs_ops": "--fs-ops",
}


class ConfigError(KillpointError, ValueError):
    """A campaign that cannot run as configured; the message names the fix."""


class OptionError(ConfigError):
    """One option with a bad value: which, the value, why, and the choices."""

    def __init__(self, option: str, value: Any, why: str, choices: Sequence[str] = ()) -> None:
        self.option = option
        self.value = value
        self.why = why.removeprefix("killpoint: ")
        self.choices = tuple(choices)
        super().__init__(self.text())

    @property
    def reason(self) -> str:
        """Why, and the choices: the part every front end says the same way."""
        if self.choices and "choose from" not in self.why:
            return f"{self.why}; choose from {', '.join(self.choices)}"
        return self.why

    def text(self, label: str | None = None) -> str:
        """One line: `killpoint: LABEL='VALUE': why; choose from ...`."""
        label = label or FLAGS.get(self.option, f"--{self.option}")
        return f"killpoint: {label}={_shown(self.value)!r}: {self.reason}"


def _shown(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return ",".join(str(v) for v in value)
    return value


def split_list(text: str) -> tuple[str, ...]:
    """`a,b`, `a, b` and `a b` alike: an ini file's lists read naturally with spaces."""
    return tuple(p for p in re.split(r"[,\s]+", text.strip()) if p)


def _names(option: str, value: Any) -> tuple[str, ...]:
    """A list option given as text or as a sequence; empty when not given (None)."""
    if value is None:
        return ()
    items = split_list(value) if isinstance(value, str) else tuple(str(v) for v in value)
    if not items:
        raise OptionError(option, value, "names nothing; leave the option out to mean every one")
    return items


@dataclass(frozen=True)
class PointSelection:
    """What `--points` selects: kinds to enumerate, a random sample size, explicit points.
    Resolved on first use: the kinds' registry is not imported by a pytest session that
    runs no crash test."""

    text: str = "all"

    def __str__(self) -> str:
        return self.text

    def resolve(self) -> tuple[tuple[str, ...], int | None, tuple[CrashPoint, ...]]:
        return _resolve(self.text)

    @property
    def kinds(self) -> tuple[str, ...]:
        return self.resolve()[0]

    @property
    def sample(self) -> int | None:
        return self.resolve()[1]

    @property
    def explicit(self) -> tuple[CrashPoint, ...]:
        return self.resolve()[2]


def parse_points(text: str) -> PointSelection:
    """A checked selection; OptionError names what is wrong."""
    selection = PointSelection(str(text).strip())
    selection.resolve()
    return selection


def _resolve(text: str) -> tuple[tuple[str, ...], int | None, tuple[CrashPoint, ...]]:
    from killpoint import kinds
    from killpoint.values.points import PointError

    groups = kinds.groups()
    if text.startswith("random:"):
        n = text.partition(":")[2]
        if not n.isdigit() or int(n) < 1:
            raise OptionError("points", text, "give a sample size of at least 1, e.g. 'random:20'")
        return groups["all"], int(n), ()
    chosen: list[str] = []
    explicit: list[CrashPoint] = []
    items = split_list(text)
    if not items:
        raise OptionError("points", text, "selects nothing", tuple(groups))
    for item in items:
        if item in groups:
            chosen += groups[item]
        elif item in kinds.REGISTRY:
            chosen.append(item)
        else:
            try:
                explicit.append(kinds.parse_point(item))
            except PointError:
                raise OptionError(
                    "points",
                    item,
                    f"not a group ({', '.join(groups)}), a kind ({', '.join(kinds.names())}), "
                    "'random:N', or a point like 'after-checkpoint:2'",
                ) from None
    return tuple(dict.fromkeys(chosen)), None, tuple(explicit)


def parse_cut_option(value: Any) -> str:
    """A cut model's name as `--cut` takes it (checked; the seed is each cell's own)."""
    from killpoint.powerloss.cut_models import CutModelError, parse_cut, spec_of

    try:
        return spec_of(parse_cut(str(value)))
    except CutModelError as exc:
        raise OptionError("cut", value, exc.why) from None


def _whole(option: str, value: Any, low: int, high: int | None = None) -> int:
    try:
        number = int(str(value).strip()) if not isinstance(value, int) else value
    except ValueError:
        raise OptionError(option, value, "give a whole number") from None
    if isinstance(value, bool) or number < low or (high is not None and number > high):
        bounds = f"from {low} to {high}" if high is not None else f"at least {low}"
        raise OptionError(option, value, f"give a whole number {bounds}")
    return number


def _seconds(option: str, value: Any) -> float:
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        raise OptionError(option, value, "give a number of seconds") from None
    if not math.isfinite(seconds) or seconds <= 0:
        raise OptionError(option, value, "give a finite number of seconds above 0")
    return seconds


def default_workers() -> int:
    """Cells at once: twice the cores. A cell spends much of its time waiting (on its
    workers' pipes, on the store), so two per core keep the cores busy; measured on 2
    cores: 6.2 cells/s with 2 at once, 8.6 with 4, no better beyond."""
    return 2 * (os.cpu_count() or 1)


@dataclass
class CampaignConfig:
    runtime: str = "reference"
    scenarios: tuple[str, ...] = ()  # empty: every built-in
    modes: tuple[str, ...] = ()  # empty: every mode the runtime can run
    points: PointSelection = field(default_factory=PointSelection)
    depth: int = 1
    seed: int | None = None
    store: str = "sqlite"
    workers: int = field(default_factory=default_workers)
    timeout: float = 30.0
    keep: str = "failed"
    work_root: Path | None = None  # the cells' folders go right here
    work_parent: Path | None = None  # or in a new killpoint-* folder here (--work-dir)
    # fast: a row's kill cells resume from one traced worker's copies (engine/row_trace.py);
    # real: each cell starts and SIGKILLs a worker of its own. `killpoint matrix` (and so
    # `make matrix`) defaults to fast; a configuration built in Python asks for it.
    kills: str = "real"
    model_behaviour: str | None = None  # every re-asked turn answered so (behaviours.py)
    shard: Shard | None = None  # run only this shard's cells (killpoint.values.shard)
    cut: str = "synced"  # power-loss points: the cut model (killpoint.powerloss.cut_models)
    fs_ops: str = "all"  # fs-op points per checkpoint: all, syncs or a number (kinds/fs_ops.py)

    def __post_init__(self) -> None:
        if isinstance(self.points, str):  # a configuration written in Python
            self.points = PointSelection(self.points.strip())

    def engine_config(self) -> EngineConfig:
        """The engine's view of this campaign: the fields it shares, never copied by hand."""
        shared = {f.name for f in fields(EngineConfig)} & {f.name for f in fields(self)}
        config = EngineConfig(**{name: getattr(self, name) for name in shared})
        from killpoint.kinds.fs_ops import KINDS

        wanted = set(KINDS)
        config.fs_trace = bool(
            wanted & set(self.points.kinds) or wanted & {p.kind for p in self.points.explicit}
        )
        return config

    @classmethod
    def from_options(cls, **given: Any) -> CampaignConfig:
        """Parse every option given (None: the default), then check the values that need
        no environment. OptionError names the first bad one."""
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(given) - names)
        if unknown:
            raise ConfigError(
                f"killpoint: unknown {plural_of('option', unknown)} {', '.join(unknown)}; choose from "
                f"{', '.join(sorted(names))}"
            )
        values: dict[str, Any] = {}
        for key, value in given.items():
            if value is None:
                continue
            if key in ("scenarios", "modes"):
                values[key] = _names(key, value)
            elif key == "points":
                values[key] = value if isinstance(value, PointSelection) else parse_points(value)
            elif key == "depth":
                values[key] = _whole(key, value, 1, 2)
            elif key == "seed":
                values[key] = _whole(key, value, 0)
            elif key == "workers":
                values[key] = _whole(key, value, 1)
            elif key == "timeout":
                values[key] = _seconds(key, value)
            elif key == "keep":
                if str(value) not in KEEP:
                    raise OptionError(key, value, "not a keep policy", KEEP)
                values[key] = str(value)
            elif key == "kills":
                if str(value) not in KILLS:
                    raise OptionError(key, value, "not a way to kill", KILLS)
                values[key] = str(value)
            elif key in ("work_root", "work_parent"):
                values[key] = Path(value).expanduser()
            elif key == "model_behaviour":
                from killpoint.scenarios.behaviours import BEHAVIOURS

                if str(value).strip() not in BEHAVIOURS:
                    raise OptionError(key, value, "not a model behaviour", BEHAVIOURS)
                values[key] = str(value).strip()
            elif key == "cut":
                values[key] = parse_cut_option(value)
            elif key == "fs_ops":
                from killpoint.kinds.fs_ops import BudgetError, parse_budget

                try:
                    values[key] = parse_budget(str(value))
                except BudgetError as exc:
                    raise OptionError(key, value, str(exc)) from None
            elif key == "shard":
                from killpoint.values.shard import ShardError, parse_shard

                try:
                    values[key] = parse_shard(value)
                except ShardError as exc:
                    raise OptionError(key, value, str(exc)) from None
            else:
                values[key] = str(value).strip()
                if key == "store":  # every message after this masks its password
                    remember_url(values[key])
        return cls(**values)

    def check(self, only: Iterable[str] | None = None) -> None:
        """Check against the environment what parsing could not (the runtime imports and
        declares the modes asked for, the scenarios resolve, the store answers, the work
        folder is writable); `only`: just these options (the plugin checks what was given,
        so that a pytest session that runs no crash test imports nothing)."""
        from killpoint.workers.processes import socket_problem

        wanted = set(only) if only is not None else {f.name for f in fields(self)}
        problem = socket_problem()
        if problem:
            raise ConfigError(problem)
        if wanted & {"runtime", "modes"}:
            adapter = runtime_adapter(self.runtime)
            declined_unknown(self.runtime, adapter)
            declared = [m.name for m in adapter.modes]
            for mode in self.modes:
                if mode not in declared:
                    raise OptionError(
                        "modes", mode, f"not a mode of runtime {self.runtime!r}", declared
                    )
        if "scenarios" in wanted:
            for name in self.scenarios:
                scenario_ref(name)
        if "store" in wanted:
            from killpoint.stores import StoreError, backend_for

            try:
                backend_for(self.store).check()
            except StoreError as exc:
                from killpoint.stores import shown

                raise OptionError("store", shown(self.store), str(exc)) from None
        for key in ("work_root", "work_parent"):
            folder = getattr(self, key)
            if folder is not None and key in wanted:
                from killpoint.engine.work_root import check_work_dir

                try:
                    check_work_dir(folder)
                except OSError as exc:
                    raise OptionError(
                        key,
                        str(folder),
                        f"cannot keep cells there ({exc.strerror or exc}); give a writable folder",
                    ) from None

    def validate(self) -> None:
        """Everything: what parsing checks, then the environment."""
        given = {f.name: getattr(self, f.name) for f in fields(self)}
        type(self).from_options(**{k: (None if v == () else v) for k, v in given.items()})
        self.check()

    def mode_names(self) -> tuple[str, ...]:
        """The modes asked for, or the runtime's runnable ones (its own names and order)."""
        from killpoint.adapters.registry import load_adapter
        from killpoint.values.modes import runnable

        return self.modes or runnable(load_adapter(self.runtime).modes)

    def scenario_names(self) -> tuple[str, ...]:
        from killpoint import scenarios

        return self.scenarios or tuple(scenarios.BUILTINS)


IMPORT_HINT = (
    "is the project importable from here? killpoint imports it with the current folder "
    "last on sys.path (pytest: set `pythonpath = .` in its ini file)"
)


def declined_unknown(spec: str, adapter: Any) -> None:
    """An adapter that declines a point kind no registered kind is named (a misspelt kind
    would decline nothing, silently)."""
    from killpoint import kinds
    from killpoint.adapters.protocol import declined_kinds

    unknown = sorted(set(declined_kinds(adapter)) - set(kinds.REGISTRY))
    if unknown:
        raise OptionError(
            "runtime",
            spec,
            f"declined_kinds names unknown {plural_of('point kind', unknown)} {', '.join(unknown)}; "
            "choose from " + ", ".join(kinds.REGISTRY),
        )


def runtime_adapter(spec: str) -> Any:
    """The adapter for `spec`, or OptionError with what failed and the fix."""
    from killpoint.adapters.protocol import AdapterError
    from killpoint.adapters.registry import load_adapter

    try:
        return load_adapter(spec)
    except AdapterError as exc:
        hint = f"; {IMPORT_HINT}" if "No module named" in str(exc) else ""
        raise OptionError("runtime", spec, f"{exc}{hint}") from None
    except Exception as exc:
        # A factory that needs arguments (an Agent factory, not wrapped), or a module that
        # raises when imported: the user's code, named with what it raised.
        raise OptionError(
            "runtime",
            spec,
            f"loading it raised {raised(exc)}; an import path must name a "
            "RuntimeAdapter (or a no-argument callable returning one); for a function that "
            "builds a killpoint.runtime.Agent, decorate it with killpoint.agent_adapter",
        ) from None


def scenario_ref(name: str) -> Any:
    """The scenario `name` names, or OptionError."""
    from killpoint.values.scenario_refs import ScenarioRefError, resolve_scenario

    try:
        return resolve_scenario(name)
    except (ScenarioRefError, LookupError) as exc:
        text = str(exc.args[0]) if isinstance(exc, LookupError) and exc.args else str(exc)
        hint = f"; {IMPORT_HINT}" if "No module named" in text else ""
        raise OptionError("scenarios", name, f"{text}{hint}") from None
    except Exception as exc:
        raise OptionError("scenarios", name, f"loading it raised {raised(exc)}") from None


def raised(exc: BaseException) -> str:
    """What the user's code raised, in one line (a message may hold newlines)."""
    return " ".join(f"{type(exc).__name__}: {exc}".split())


def labelled(error: OptionError, labels: Mapping[str, str]) -> str:
    """The error's line with a front end's own name for the option."""
    return error.text(labels.get(error.option))


__all__ = [
    "KEEP",
    "CampaignConfig",
    "ConfigError",
    "OptionError",
    "PointSelection",
    "default_workers",
    "labelled",
    "parse_points",
    "runtime_adapter",
    "scenario_ref",
    "split_list",
]
